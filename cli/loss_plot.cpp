#include "loss_plot.h"

#include <algorithm>
#include <sstream>

namespace onyx::cli {

std::string loss_svg(const std::vector<float>& losses, const std::vector<ValidationPoint>& validation,
                     const std::string& title) {
  const double width = 800, height = 420, left = 60, right = validation.empty() ? 20 : 60, top = 40, bottom = 50;
  double hi = 0;
  for (float l : losses) hi = std::max(hi, double(l));
  for (const auto& v : validation) hi = std::max(hi, v.loss);
  hi = hi > 0 ? hi * 1.05 : 1;
  size_t n = std::max<size_t>(losses.size(), 2);
  auto x = [&](double step) { return left + (width - left - right) * step / double(n - 1); };
  auto y = [&](double v) { return top + (height - top - bottom) * (1 - v / hi); };
  auto y_accuracy = [&](double a) { return top + (height - top - bottom) * (1 - a); };
  std::ostringstream svg;
  svg.precision(5);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << title << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << width - right << "\" y2=\"" << y(0)
      << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << y(0)
      << "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    double v = hi * k / 4;
    svg << "<text x=\"" << left - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">" << v << "</text>\n";
    if (!validation.empty())
      svg << "<text x=\"" << width - right + 6 << "\" y=\"" << y_accuracy(k / 4.0) + 4 << "\" fill=\"#238b45\">"
          << 25 * k << "%</text>\n";
  }
  svg << "<text x=\"" << left << "\" y=\"" << height - 15 << "\">step 0</text>\n<text x=\"" << width - right
      << "\" y=\"" << height - 15 << "\" text-anchor=\"end\">step " << losses.size() << "</text>\n";
  auto polyline = [&](const std::vector<std::pair<double, double>>& points, const char* style) {
    svg << "<polyline fill=\"none\" " << style << " points=\"";
    size_t stride = std::max<size_t>(1, points.size() / 2000);  // at most ~2000 points
    for (size_t i = 0; i < points.size(); i += stride) svg << x(points[i].first) << "," << points[i].second << " ";
    svg << "\"/>\n";
  };
  std::vector<std::pair<double, double>> raw, mean;
  double sum = 0;
  const size_t window = std::max<size_t>(1, losses.size() / 50);
  for (size_t i = 0; i < losses.size(); ++i) {
    sum += losses[i];
    if (i >= window) sum -= losses[i - window];
    raw.emplace_back(double(i), y(losses[i]));
    mean.emplace_back(double(i), y(sum / double(std::min(i + 1, window))));
  }
  polyline(raw, "stroke=\"#9ecae1\" stroke-width=\"1\"");
  polyline(mean, "stroke=\"#08519c\" stroke-width=\"2\"");
  std::vector<std::pair<double, double>> valid_loss, valid_accuracy;
  for (const auto& v : validation) {
    double at = double(std::max<int64_t>(v.step - 1, 0));
    valid_loss.emplace_back(at, y(v.loss));
    valid_accuracy.emplace_back(at, y_accuracy(v.accuracy));
    svg << "<circle cx=\"" << x(at) << "\" cy=\"" << y(v.loss) << "\" r=\"3\" fill=\"#cb181d\"/>\n<circle cx=\"" << x(at)
        << "\" cy=\"" << y_accuracy(v.accuracy) << "\" r=\"3\" fill=\"#238b45\"/>\n";
  }
  if (!validation.empty()) {
    polyline(valid_loss, "stroke=\"#cb181d\" stroke-width=\"2\"");
    polyline(valid_accuracy, "stroke=\"#238b45\" stroke-width=\"2\"");
  }
  svg << "<text x=\"" << width - right << "\" y=\"" << top << "\" text-anchor=\"end\" fill=\"#08519c\">training loss (mean of "
      << window << " steps)</text>\n";
  if (!validation.empty())
    svg << "<text x=\"" << width - right << "\" y=\"" << top + 16
        << "\" text-anchor=\"end\" fill=\"#cb181d\">validation loss</text>\n<text x=\"" << width - right << "\" y=\""
        << top + 32 << "\" text-anchor=\"end\" fill=\"#238b45\">validation accuracy</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace onyx::cli
