// `spgen tune` end to end: on a small real matrix (cora; a random one where ../shared is absent)
// with a short budget it writes a config whose kernel matches the reference evaluator, from which
// `spgen gen` is deterministic; its trials CSV and database record every measurement; Ctrl-C
// keeps the best so far and still writes the config.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process.h"
#include "ref_tensor.h"
#include "ref_statements.h"
#include "reference.h"

using namespace spgen_test;

namespace {

std::string matrix_input() {
  const std::string dir = data_dir();
  return dir.empty() ? "random" : dir + "/cora.mtx";
}

ProcessResult spgen(std::vector<std::string> args) {
  args.insert(args.begin(), spgen_binary());
  return run_process(args);
}

int lines_of(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("tune: a short search on a real matrix writes a config whose kernel matches the reference") {
  TempDir dir;
  const std::string spec = source_root() + "/specs/sddmm.spg";
  const std::string base = source_root() + "/tests/e2e/cases/sddmm_auto_csr.json";
  const std::string tuned = dir.file("tuned.json");
  ProcessResult r = spgen({"tune", spec, "-c", base, "--input", "X=" + matrix_input(), "--input", "A=random", "--input", "B=random",
                           "--dim", "k=16", "--budget", "15s", "--threads", "2", "--seed", "3", "--db", dir.file("db.jsonl"),
                           "--trials", dir.file("trials.csv"), "-o", tuned});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("spgen tune: auto ") != std::string::npos);
  nlohmann::json config = nlohmann::json::parse(read_text(tuned));
  REQUIRE(config.contains("tuned"));
  const nlohmann::json& record = config["tuned"];
  CHECK(record["auto_ms"].get<double>() > 0);
  CHECK(record["tuned_ms"].get<double>() > 0);
  CHECK(record["tuned_ms"].get<double>() <= record["auto_ms"].get<double>() * 1.0001);  // never slower than auto
  CHECK(record["trials"].get<int>() >= 2);
  CHECK(record["dims"]["k"] == 16);
  CHECK(config["schedule"].is_array());
  CHECK(config["tensors"]["X"]["format"] == "csr");  // what the base pins is kept
  // Every measurement: a CSV row each (auto's first run aside), a database line each.
  CHECK(lines_of(read_text(dir.file("trials.csv"))) == record["trials"].get<int>());
  CHECK(lines_of(read_text(dir.file("db.jsonl"))) == record["trials"].get<int>());

  // The tuned config is an ordinary one: gen is byte-for-byte deterministic from it ...
  std::filesystem::create_directories(dir.file("a"));
  std::filesystem::create_directories(dir.file("b"));
  REQUIRE(spgen({"gen", spec, "-c", tuned, "-o", dir.file("a")}).exit_code == 0);
  REQUIRE(spgen({"gen", spec, "-c", tuned, "-o", dir.file("b")}).exit_code == 0);
  CHECK(read_text(dir.file("a/sddmm_auto_csr.cpp")) == read_text(dir.file("b/sddmm_auto_csr.cpp")));
  // ... and its kernel matches the reference evaluator.
  ProcessResult run = spgen({"run", spec, "-c", tuned, "--input", "X=" + matrix_input(), "--input", "A=random", "--input",
                             "B=random", "--dim", "k=16", "--save-input", "X=" + dir.file("X.mtx"), "--save-input",
                             "A=" + dir.file("A.mtx"), "--save-input", "B=" + dir.file("B.mtx"), "--output", "Y=" + dir.file("Y.mtx")});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::map<std::string, spgen_ref::Tensor> inputs;
  for (const char* name : {"X", "A", "B"}) inputs[name] = spgen_ref::read_tensor(dir.file(std::string(name) + ".mtx"));
  spgen_ref::Tensor want = spgen_ref::evaluate(read_text(spec), inputs, {{"k", 16}});
  spgen_ref::Comparison cmp = spgen_ref::compare(spgen_ref::read_tensor(dir.file("Y.mtx")), want, 2e-4, 2e-4);
  INFO(cmp.message);
  CHECK(cmp.ok);

  // A second run finds the first in the database: the same input's measurements seed its model.
  ProcessResult again = spgen({"tune", spec, "-c", base, "--input", "X=" + matrix_input(), "--input", "A=random", "--input",
                               "B=random", "--dim", "k=16", "--budget", "8s", "--threads", "2", "--seed", "3", "--db",
                               dir.file("db.jsonl"), "-o", dir.file("tuned2.json")});
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(lines_of(read_text(dir.file("db.jsonl"))) > record["trials"].get<int>());
}

TEST_CASE("tune: a spec of several statements is measured fused and apart; the tuned config's kernel matches the reference") {
  TempDir dir;
  const std::string spec = source_root() + "/tests/e2e/statements/attention.spg";
  const std::string base = source_root() + "/tests/e2e/statements/attention_auto.json";
  const std::string tuned = dir.file("tuned.json");
  const std::vector<std::string> inputs = {"--input", "M=" + matrix_input(), "--input", "Q=random", "--input", "K=random",
                                           "--input", "V=random", "--dim", "k=8", "--dim", "d=8"};
  std::vector<std::string> args = {"tune", spec, "-c", base, "--budget", "15s", "--threads", "2", "--db", dir.file("db.jsonl"),
                                   "--trials", dir.file("trials.csv"), "-o", tuned};
  args.insert(args.end(), inputs.begin(), inputs.end());
  ProcessResult r = spgen(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json config = nlohmann::json::parse(read_text(tuned));
  REQUIRE(config.contains("tuned"));
  const nlohmann::json& record = config["tuned"];
  CHECK(record["tuned_ms"].get<double>() <= record["auto_ms"].get<double>() * 1.0001);
  CHECK(record["trials"].get<int>() >= 2);
  // auto's kernel and at least one other way (fused or apart) were measured: the trials list
  // every search's measurements (the record's alternatives only the last search's).
  const std::string trials = read_text(dir.file("trials.csv"));
  CHECK((trials.find("\"fuse=fused\"") != std::string::npos || trials.find("\"fuse=apart\"") != std::string::npos));
  if (config.contains("fuse")) CHECK(config["fuse"].is_boolean());
  // Run apart, each statement's own schedule is searched next: its knobs are named by statement.
  if (config.contains("fuse") && config["fuse"] == false)
    CHECK(trials.find("statement 1: ") != std::string::npos);
  else
    CHECK(config["schedule"] == "auto");  // (fused: the statements' schedules stay auto's)
  // The tuned config's kernel against the statements evaluated in turn.
  std::vector<std::string> run = {"run", spec, "-c", tuned, "--output", "O=" + dir.file("O.mtx")};
  run.insert(run.end(), inputs.begin(), inputs.end());
  for (const char* name : {"M", "Q", "K", "V"}) run.insert(run.end(), {"--save-input", std::string(name) + "=" + dir.file(std::string(name) + ".mtx")});
  ProcessResult ran = spgen(run);
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  std::map<std::string, spgen_ref::Tensor> values;
  for (const char* name : {"M", "Q", "K", "V"}) values[name] = spgen_ref::read_tensor(dir.file(std::string(name) + ".mtx"));
  std::map<std::string, spgen_ref::StoredAs> stored = {{"m", {true, ""}}, {"l", {true, ""}}, {"E", {false, "S"}}, {"O", {true, ""}}};
  spgen_ref::Comparison cmp = spgen_ref::compare(spgen_ref::read_tensor(dir.file("O.mtx")),
                                                 spgen_ref::evaluate_statements(read_text(spec), values, stored).at("O"), 2e-4, 2e-4);
  INFO(cmp.message);
  CHECK(cmp.ok);
}

TEST_CASE("tune: Ctrl-C keeps the best so far and still writes the config") {
  TempDir dir;
  const std::string tuned = dir.file("tuned.json");
  // SIGINT to spgen alone, of a 10-minute budget, once the first round's candidates are being
  // built (their directories appear under --keep), so auto has been measured; then spgen's own
  // exit status. (A fixed delay raced the search, which may end by itself within seconds.)
  const std::string script =
      "\"$@\" & pid=$!; for t in $(seq 600); do [ -d \"$KEEP/candidate-2\" ] && break; sleep 0.1; done; "
      "kill -INT $pid; wait $pid";
  setenv("KEEP", dir.file("keep").c_str(), 1);
  ProcessResult r = run_process({"bash", "-c", script, "bash", spgen_binary(), "tune", source_root() + "/specs/spmv.spg", "-c",
                                 source_root() + "/tests/e2e/cases/spmv_auto_csr.json", "--input", "A=" + matrix_input(),
                                 "--input", "x=random", "--budget", "10m", "--db", "off", "--keep", dir.file("keep"), "-o", tuned});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json config = nlohmann::json::parse(read_text(tuned));
  CHECK(config["tuned"]["stopped"] == "interrupted");
  CHECK(config["schedule"].is_array());
}

TEST_CASE("tune: an input's format left to spgen is measured among its alternatives and written out") {
  TempDir dir;
  const std::string spec = source_root() + "/specs/spmv.spg";
  const std::string base = dir.file("base.json"), tuned = dir.file("tuned.json");
  write_text(base, R"({"tensors": {"A": {"format": "auto"}}, "schedule": "auto"})");
  // What gen stores without measuring, and says so.
  REQUIRE(spgen({"gen", spec, "-c", base, "-o", dir.path()}).exit_code == 0);
  CHECK(read_text(dir.file("spmv.h")).find("A: csr (levels dense i, compressed j), \"auto\": the default sparse format") !=
        std::string::npos);
  ProcessResult r = spgen({"tune", spec, "-c", base, "--input", "A=" + matrix_input(), "--input", "x=random", "--budget", "20s",
                           "--threads", "2", "--db", dir.file("db.jsonl"), "--trials", dir.file("trials.csv"), "-o", tuned});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json config = nlohmann::json::parse(read_text(tuned));
  const nlohmann::json& record = config["tuned"];
  // Every format tried is listed with its time (csr's auto first measured; csc at least besides).
  REQUIRE(record["formats"].is_array());
  CHECK(record["formats"].size() >= 2);
  CHECK(record["speedup"].get<double>() >= 1.0);
  CHECK(record["tuned_ms"].get<double>() <= record["auto_ms"].get<double>() * 1.0001);
  // The format is written out (the default too), with a schedule for it.
  const std::string format = config["tensors"]["A"]["format"].get<std::string>();
  CHECK(format != "auto");
  CHECK(config["schedule"].is_array());
  if (format != "csr") CHECK(record["conversion"].is_array());
  CHECK(lines_of(read_text(dir.file("trials.csv"))) == record["trials"].get<int>());
  CHECK(lines_of(read_text(dir.file("db.jsonl"))) == record["trials"].get<int>());
  CHECK(read_text(dir.file("trials.csv")).find("format A=csc") != std::string::npos);
  // On cora (skewed rows) hyb is a candidate too, with its own schedule; a random A has none.
  if (matrix_input() != "random") CHECK(read_text(dir.file("trials.csv")).find("format A=hyb 1-") != std::string::npos);

  // Its kernel matches the reference evaluator.
  ProcessResult run = spgen({"run", spec, "-c", tuned, "--input", "A=" + matrix_input(), "--input", "x=random", "--save-input",
                             "A=" + dir.file("A.mtx"), "--save-input", "x=" + dir.file("x.mtx"), "--output", "y=" + dir.file("y.mtx")});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("pack_ms A=") != std::string::npos);  // what storing A in its format took
  std::map<std::string, spgen_ref::Tensor> inputs;
  for (const char* name : {"A", "x"}) inputs[name] = spgen_ref::read_tensor(dir.file(std::string(name) + ".mtx"));
  spgen_ref::Comparison cmp =
      spgen_ref::compare(spgen_ref::read_tensor(dir.file("y.mtx")), spgen_ref::evaluate(read_text(spec), inputs, {}), 2e-4, 2e-4);
  INFO(cmp.message);
  CHECK(cmp.ok);
}

TEST_CASE("tune: with the schedule pinned, only the formats left to spgen are searched, within the budget") {
  TempDir dir;
  const std::string spec = source_root() + "/specs/spmv.spg";
  const std::string base = dir.file("base.json"), tuned = dir.file("tuned.json");
  const nlohmann::json schedule = nlohmann::json::parse(R"([{"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 64}])");
  write_text(base, nlohmann::json{{"tensors", {{"A", {{"format", "auto"}}}}}, {"schedule", schedule}}.dump());
  // One thread: the suite runs two tests at once, and two threads of a kernel beside another test
  // measure by the scheduler's time slices (cora's SpMV 8 ms for 0.005 at times), which decides
  // what is a finalist (a unit test covers that rule) and how long the rounds take.
  ProcessResult r = spgen({"tune", spec, "-c", base, "--input", "A=" + matrix_input(), "--input", "x=random", "--budget", "10s",
                           "--threads", "1", "--db", "off", "-o", tuned});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json config = nlohmann::json::parse(read_text(tuned));
  CHECK(config["schedule"] == schedule);  // kept as given
  CHECK(config["tensors"]["A"]["format"] != "auto");
  CHECK(config["tuned"]["formats"].size() >= 1);
  // Within the budget, give or take the confirmation rounds.
  CHECK(config["tuned"]["tuning_seconds"].get<double>() < 20);
}

TEST_CASE("auto: an input whose format is \"auto\" is decomposed into SELL where its rows are short and uneven, into interleaved ELL where they are short and alike, into BSR where its blocks are nearly full") {
  if (data_dir().empty()) {
    MESSAGE("skipped: ../shared/data is absent");
    return;
  }
  TempDir dir;
  const std::string spec = source_root() + "/specs/spmv.spg";
  const std::string config = dir.file("auto.json");
  write_text(config, R"({"tensors": {"A": {"format": "auto"}}, "types": {"value": "float32", "index": "int32"}, "schedule": "auto"})");
  // spgen gen with cora's statistics (3.9 entries a row, coefficient of variation 1.34): SELL-8-512.
  ProcessResult gen = spgen({"gen", spec, "-c", config, "--stats", "A=" + data_dir() + "/cora.mtx", "-o", dir.path()});
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  const std::string header = read_text(dir.file("spmv.h"));
  CHECK(header.find("decompose(A, sell, slices of 8, sorted in windows of 512): \"format\": \"auto\" on A, whose rows are short "
                    "and uneven (3.9 entries a row, coefficient of variation 1.34)") != std::string::npos);
  CHECK(header.find("int spmv_decompose_A(") != std::string::npos);
  // wing's rows are short and of nearly one length (at most 4): ELL of 4 slots interleaved by 16 rows.
  ProcessResult even = spgen({"gen", spec, "-c", config, "--stats", "A=" + data_dir() + "/wing.mtx", "-o", dir.path()});
  REQUIRE(even.exit_code == 0);
  CHECK(read_text(dir.file("spmv.h")).find("decompose(A, ell+coo, width 4, interleaved by 16): \"format\": \"auto\" on A, whose rows "
                                           "are short and of nearly one length (at most 4, 3.9 on average)") != std::string::npos);
  // spgen run reads its inputs' statistics: the same choices, and the kernels match the reference.
  for (const auto& [matrix, chosen] : {std::pair<std::string, std::string>{"pubmed", "decompose(A, sell"}, {"wing", "decompose(A, ell+coo"},
                                       {"bcsstk16", "decompose(A, bsr, block 3x3"}}) {
    CAPTURE(matrix);
    const std::string kept = dir.file("kept-" + matrix);
    ProcessResult run = spgen({"run", spec, "-c", config, "--input", "A=" + data_dir() + "/" + matrix + ".mtx", "--input", "x=random",
                               "--save-input", "x=" + dir.file("x.mtx"), "--output", "y=" + dir.file("y.mtx"), "--threads", "2",
                               "--keep", kept});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(read_text(kept + "/spmv.h").find(chosen) != std::string::npos);
    std::map<std::string, spgen_ref::Tensor> inputs = {{"A", spgen_ref::read_tensor(data_dir() + "/" + matrix + ".mtx")},
                                                       {"x", spgen_ref::read_tensor(dir.file("x.mtx"))}};
    spgen_ref::Comparison cmp =
        spgen_ref::compare(spgen_ref::read_tensor(dir.file("y.mtx")), spgen_ref::evaluate(read_text(spec), inputs, {}), 2e-4, 2e-4);
    INFO(cmp.message);
    CHECK(cmp.ok);
  }
}
