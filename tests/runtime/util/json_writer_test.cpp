#include <onyx/util/json_writer.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onyx::util {
namespace {

TEST(JsonWriter, CompactNestingAndSeparators) {
  JsonWriter j;
  j.begin_object().key("a").value(1).key("b").begin_array().value(2).value("x").end_array();
  j.key("c").begin_object().end_object().key("d").begin_array().end_array().end_object();
  EXPECT_EQ(j.str(), R"({"a":1,"b":[2,"x"],"c":{},"d":[]})");
}

TEST(JsonWriter, ValuesOfEveryKind) {
  JsonWriter j;
  j.begin_array().value(true).value(false).value(int64_t(-3)).value(uint64_t(18446744073709551615u));
  j.value(0.5).value(1.0 / 3, 6).null().raw(R"({"k":[1]})").value(std::string("s")).end_array();
  EXPECT_EQ(j.str(), R"([true,false,-3,18446744073709551615,0.5,0.333333,null,{"k":[1]},"s"])");
}

TEST(JsonWriter, NonFiniteNumbersAreNull) {
  JsonWriter j;
  j.begin_array().value(std::nan("")).value(std::numeric_limits<double>::infinity()).end_array();
  EXPECT_EQ(j.str(), "[null,null]");
}

TEST(JsonWriter, QuotesEscapes) {
  EXPECT_EQ(json_quote("a\"b\\c\n\t\r\x01"), R"("a\"b\\c\n\t\r\u0001")");
  JsonWriter j;
  j.begin_object().key("k\"").value("\x1f").end_object();
  EXPECT_EQ(j.str(), R"({"k\"":"\u001f"})");
}

TEST(JsonWriter, LineDepthPutsOneRecordPerLine) {
  JsonWriter j(2);
  j.begin_object().key("cases").begin_array();
  j.begin_object().key("suite").value("abi").key("case").value("x").end_object();
  j.begin_object().key("suite").value("node").key("list").begin_array().value(1).value(2).end_array().end_object();
  j.end_array().key("empty").begin_array().end_array().key("n").value(3).end_object();
  EXPECT_EQ(j.str(),
            "{\n"
            "  \"cases\": [\n"
            "    {\"suite\": \"abi\", \"case\": \"x\"},\n"
            "    {\"suite\": \"node\", \"list\": [1, 2]}\n"
            "  ],\n"
            "  \"empty\": [],\n"
            "  \"n\": 3\n"
            "}");
}

}  // namespace
}  // namespace onyx::util
