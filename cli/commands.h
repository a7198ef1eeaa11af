// commands.h: the subcommands `onyx` dispatches to. Adding one (train,
// artifacts, checkpoint, ...) means a cmd_<name>.cpp defining its Command and
// a line in all_commands() (main.cpp).
#pragma once

#include "command.h"

namespace onyx::cli {

Command providers_command();
Command info_command();
Command run_command();
Command bench_command();
Command checkpoint_command();
Command artifacts_command();
Command train_command();
Command eval_command();

}  // namespace onyx::cli
