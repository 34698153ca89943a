// `spgen run`: generate, compile with the system compiler, and run a driver on real inputs.
#include "cli/commands.h"
#include "cli/driver_build.h"
#include "lower.h"
#include "support/files.h"
#include "support/text.h"

namespace spgen::cli {

int run_run(const RunOptions& options) {
  CompileInput input{options.spec, read_file(options.spec), options.config, read_file(options.config),
                     target_option(options.target), options.sizes};
  // `auto` knows the structure of the sparse inputs the kernel runs on. (A malformed --input is
  // left to the driver, which reports it.)
  for (size_t k = 0; k + 1 < options.driver_args.size(); ++k) {
    if (options.driver_args[k] != "--input") continue;
    std::optional<std::pair<std::string, std::string>> input_file = split_name_value(options.driver_args[k + 1]);
    if (input_file && input_file->second != "random") input.stats_files[input_file->first] = input_file->second;
  }
  input.read_stats = read_stats_file;
  input.stats_flag = "--input";
  Compilation c = compile(input);
  ScratchDir dir(options.keep_dir);
  std::string binary = build_driver(c, dir.path(), {options.extra_cxxflags, options.verbose});
  std::vector<std::string> run = {binary};
  run.insert(run.end(), options.driver_args.begin(), options.driver_args.end());
  return spawn(run);
}

}  // namespace spgen::cli
