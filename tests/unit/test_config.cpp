// Tests of pass 1b (src/frontend/config.cpp): the JSON config, read and validated against the
// spec. Valid configs are checked field by field; every error path by its exact message
// `config.json: /json/path: error: ...`.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"
#include "frontend/parser.h"
#include "support/diagnostics.h"

namespace {

using spgen::CompileError;
using spgen::Config;
using spgen::Format;
using spgen::LevelKind;

const char* const kSpmv = "y(i) = A(i,j) * x(j)";
const char* const kSpmm = "C(i,k) = A(i,j) * B(j,k)";
const char* const kTtv = "A(i,j) = B(i,j,k) * c(k)";
const char* const kDot = "a = x(i) * z(i)";

constexpr LevelKind D = LevelKind::Dense;
constexpr LevelKind C = LevelKind::Compressed;
using Levels = std::vector<LevelKind>;
using Modes = std::vector<int>;
using Names = std::vector<std::string>;

Config read(const std::string& json, const std::string& spec_text = kSpmm,
            const std::string& default_name = "kernel") {
  spgen::ast::Spec spec = spgen::parse_spec("spec.spg", spec_text);
  return spgen::read_config("config.json", json, spec, default_name);
}

// what() of the CompileError read_config throws; "" (and a failed check) if it accepts the config.
std::string error_of(const std::string& json, const std::string& spec_text = kSpmm,
                     const std::string& default_name = "kernel") {
  spgen::ast::Spec spec = spgen::parse_spec("spec.spg", spec_text);
  try {
    spgen::read_config("config.json", json, spec, default_name);
    FAIL_CHECK("expected a CompileError for config: " << json);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// The message a config error at `path` must have, exactly.
std::string config_error(const std::string& path, const std::string& message) {
  return "config.json: " + path + ": error: " + message + "\n";
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

void check_format(const Format& format, const std::string& name, const Levels& levels, const Modes& order) {
  CHECK(format.name == name);
  CHECK(format.levels == levels);
  CHECK(format.mode_order == order);
}

Format format_of(const std::string& tensor, const std::string& format_json, const std::string& spec = kSpmm) {
  Config config = read("{\"tensors\": {\"" + tensor + "\": {\"format\": " + format_json + "}}}", spec);
  return config.format_of(tensor);
}

std::string format_error(const std::string& tensor, const std::string& format_json, const std::string& spec = kSpmm) {
  return error_of("{\"tensors\": {\"" + tensor + "\": {\"format\": " + format_json + "}}}", spec);
}

std::string op_error(const std::string& op_json, const std::string& spec = kSpmm) {
  return error_of("{\"schedule\": [" + op_json + "]}", spec);
}

template <class Op>
const Op& op_at(const Config& config, size_t index) {
  REQUIRE(index < config.schedule.size());
  const Op* op = std::get_if<Op>(&config.schedule[index].op);
  REQUIRE(op != nullptr);
  return *op;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Valid configs

TEST_CASE("config: an empty object takes every default") {
  Config config = read("{}", kSpmm, "spmm");
  CHECK(config.file == "config.json");
  CHECK(config.name == "spmm");
  CHECK(config.target == spgen::Target::Cpu);
  CHECK(config.value_type == spgen::ValueType::Float32);
  CHECK(config.index_type == spgen::IndexType::Int32);
  CHECK_FALSE(config.auto_schedule);
  CHECK(config.schedule.empty());
  REQUIRE(config.formats.size() == 3);
  for (const char* tensor : {"A", "B", "C"}) {
    CAPTURE(tensor);
    REQUIRE(config.formats.count(tensor) == 1);
    const Format& format = config.format_of(tensor);
    check_format(format, "dense", {D, D}, {0, 1});
    CHECK(format.all_dense());
    CHECK(format.is_row_major_dense());
  }
  CHECK_THROWS(config.format_of("Z"));
}

TEST_CASE("config: every tensor of the spec gets a format, scalars and vectors included") {
  Config config = read("{\"tensors\": {\"x\": {\"format\": \"sv\"}}}", kDot, "dot");
  REQUIRE(config.formats.size() == 3);
  check_format(config.format_of("a"), "dense", {}, {});
  CHECK(config.format_of("a").all_dense());
  CHECK(config.format_of("a").is_row_major_dense());
  check_format(config.format_of("x"), "sv", {C}, {0});
  check_format(config.format_of("z"), "dense", {D}, {0});
}

TEST_CASE("config: an output format omitted or \"auto\" is left to inference; inputs default to dense") {
  CHECK(read("{}").infer_output_format);
  CHECK(read(R"({"tensors": {"C": {"format": "auto"}}})").infer_output_format);
  Config given = read(R"({"tensors": {"C": {"format": "dense"}}})");
  CHECK_FALSE(given.infer_output_format);
  CHECK_FALSE(read("{}", "C(i,j) += A(i,j) * B(i,j)").infer_output_format);  // `+=` reads its output
  check_format(read(R"({"tensors": {"C": {"format": "auto"}}})").format_of("C"), "dense", {D, D}, {0, 1});  // until inferred
}

TEST_CASE("config: \"auto\" on an input stores it in its order's default sparse format, and says so") {
  Config config = read(R"({"tensors": {"A": {"format": "auto"}}})");
  check_format(config.format_of("A"), "csr", {D, C}, {0, 1});
  CHECK(config.auto_formats == std::set<std::string>{"A"});
  CHECK(config.infer_output_format);  // C omitted: still inferred
  CHECK(read(R"({"tensors": {"A": {"format": "csr"}}})").auto_formats.empty());
  check_format(spgen::auto_input_format(1), "sv", {C}, {0});
  check_format(spgen::auto_input_format(3), "csf", {C, C, C}, {0, 1, 2});
  CHECK(spgen::auto_input_format(0).levels.empty());
  // "width" and "block" belong to a format given by name, not to one left to spgen.
  CHECK(error_of(R"({"tensors": {"A": {"format": "auto", "block": [2, 2]}}})").find("\"block\" belongs to the \"bsr\" format") !=
        std::string::npos);
}

TEST_CASE("config: a full config, as in specs/spmm_csr.json") {
  const char* json = R"({
  "name": "spmm_csr",
  "description": "anything",
  "target": "cpu",
  "types": {"value": "float32", "index": "int32"},
  "tensors": {
    "A": {"format": "csr"},
    "B": {"format": "dense"},
    "C": {"format": "dense"}
  },
  "schedule": [
    {"op": "split", "var": "i", "factor": 32, "into": ["i0", "i1"]},
    {"op": "parallel", "var": "i0", "schedule": "dynamic", "chunk": 1},
    {"op": "vectorize", "var": "k"}
  ]
})";
  Config config = read(json, kSpmm, "ignored");
  CHECK(config.name == "spmm_csr");
  CHECK(config.target == spgen::Target::Cpu);
  check_format(config.format_of("A"), "csr", {D, C}, {0, 1});
  check_format(config.format_of("B"), "dense", {D, D}, {0, 1});
  REQUIRE(config.schedule.size() == 3);
  const auto& split = op_at<spgen::SplitOp>(config, 0);
  CHECK(split.var == "i");
  CHECK(split.factor == 32);
  CHECK(split.outer == "i0");
  CHECK(split.inner == "i1");
  const auto& parallel = op_at<spgen::ParallelOp>(config, 1);
  CHECK(parallel.var == "i0");
  CHECK(parallel.schedule == spgen::OmpSchedule::Dynamic);
  CHECK(parallel.chunk == 1);
  CHECK(op_at<spgen::VectorizeOp>(config, 2).var == "k");
  for (int i = 0; i < 3; ++i) {
    CHECK(config.schedule[i].index == i);
    CHECK(config.schedule[i].path == "/schedule/" + std::to_string(i));
  }
}

TEST_CASE("config: target and types") {
  Config config = read(R"({"target": "cuda", "types": {"value": "float64", "index": "int64"}})");
  CHECK(config.target == spgen::Target::Cuda);
  CHECK(config.value_type == spgen::ValueType::Float64);
  CHECK(config.index_type == spgen::IndexType::Int64);
  // Each type may be given alone; the other keeps its default.
  Config value_only = read(R"({"types": {"value": "float64"}})");
  CHECK(value_only.value_type == spgen::ValueType::Float64);
  CHECK(value_only.index_type == spgen::IndexType::Int32);
  Config index_only = read(R"({"types": {"index": "int64"}})");
  CHECK(index_only.value_type == spgen::ValueType::Float32);
  CHECK(index_only.index_type == spgen::IndexType::Int64);
  CHECK(read(R"({"types": {}})").value_type == spgen::ValueType::Float32);
  CHECK(read(R"({"target": "cpu"})").target == spgen::Target::Cpu);
  CHECK(std::string(spgen::value_type_name(spgen::ValueType::Float32)) == "float32");
  CHECK(std::string(spgen::value_type_name(spgen::ValueType::Float64)) == "float64");
  CHECK(std::string(spgen::index_type_name(spgen::IndexType::Int32)) == "int32");
  CHECK(std::string(spgen::index_type_name(spgen::IndexType::Int64)) == "int64");
  CHECK(std::string(spgen::level_kind_name(D)) == "dense");
  CHECK(std::string(spgen::level_kind_name(C)) == "compressed");
}

TEST_CASE("config: the kernel name") {
  CHECK(read("{}", kSpmm, "from_the_spec_stem").name == "from_the_spec_stem");
  CHECK(read(R"({"name": "_k2"})", kSpmm, "default").name == "_k2");
  // An explicit name wins, even when the default would not be a C identifier.
  CHECK(read(R"({"name": "ok"})", kSpmm, "my-spec").name == "ok");
}

TEST_CASE("config: shorthand formats") {
  check_format(format_of("A", "\"dense\""), "dense", {D, D}, {0, 1});
  check_format(format_of("A", "\"csr\""), "csr", {D, C}, {0, 1});
  check_format(format_of("A", "\"csc\""), "csc", {D, C}, {1, 0});
  check_format(format_of("A", "\"dcsr\""), "dcsr", {C, C}, {0, 1});
  check_format(format_of("A", "\"dcsc\""), "dcsc", {C, C}, {1, 0});
  check_format(format_of("A", "\"csf\""), "csf", {C, C}, {0, 1});
  check_format(format_of("B", "\"csf\"", kTtv), "csf", {C, C, C}, {0, 1, 2});
  check_format(format_of("B", "\"dense\"", kTtv), "dense", {D, D, D}, {0, 1, 2});
  check_format(format_of("x", "\"sv\"", kSpmv), "sv", {C}, {0});
  check_format(format_of("x", "\"sparse-vector\"", kSpmv), "sparse-vector", {C}, {0});
  check_format(format_of("a", "\"dense\"", kDot), "dense", {}, {});
  CHECK_FALSE(format_of("A", "\"csr\"").all_dense());
  CHECK_FALSE(format_of("A", "\"csr\"").is_row_major_dense());
}

TEST_CASE("config: explicit levels and order") {
  check_format(format_of("A", R"({"levels": ["dense-fixed", "sparse-variable"], "order": [1, 0]})"), "custom", {D, C},
               {1, 0});
  check_format(format_of("A", R"({"levels": ["dense", "compressed"]})"), "custom", {D, C}, {0, 1});
  check_format(format_of("A", R"({"levels": ["compressed", "dense"], "order": [0, 1]})"), "custom", {C, D}, {0, 1});
  check_format(format_of("B", R"({"levels": ["dense", "sparse-variable", "compressed"], "order": [2, 0, 1]})", kTtv),
               "custom", {D, C, C}, {2, 0, 1});
  check_format(format_of("a", R"({"levels": []})", kDot), "custom", {}, {});
  check_format(format_of("a", R"({"levels": [], "order": []})", kDot), "custom", {}, {});
  // All dense in a permuted order is dense, but not row-major.
  Format column_major = format_of("A", R"({"levels": ["dense-fixed", "dense"], "order": [1, 0]})");
  CHECK(column_major.all_dense());
  CHECK_FALSE(column_major.is_row_major_dense());
  Format row_major = format_of("A", R"({"levels": ["dense", "dense"]})");
  CHECK(row_major.all_dense());
  CHECK(row_major.is_row_major_dense());
}

TEST_CASE("config: tensors not listed, or listed without a format, are dense") {
  Config config = read(R"({"tensors": {"A": {"format": "csr"}, "B": {}}})");
  check_format(config.format_of("A"), "csr", {D, C}, {0, 1});
  check_format(config.format_of("B"), "dense", {D, D}, {0, 1});
  check_format(config.format_of("C"), "dense", {D, D}, {0, 1});
  Config ttv = read(R"({"tensors": {}})", kTtv);
  check_format(ttv.format_of("B"), "dense", {D, D, D}, {0, 1, 2});
  check_format(ttv.format_of("c"), "dense", {D}, {0});
  CHECK(spgen::dense_format(2).is_row_major_dense());
  check_format(spgen::dense_format(3), "dense", {D, D, D}, {0, 1, 2});
}

TEST_CASE("config: schedule ops with every field") {
  Config config = read(R"({"schedule": [
    {"op": "reorder", "order": ["j", "i", "k"]},
    {"op": "split", "var": "i", "factor": 32, "into": ["io", "ii"]},
    {"op": "parallel", "var": "io", "schedule": "guided", "chunk": 16},
    {"op": "vectorize", "var": "k"},
    {"op": "unroll", "var": "j", "factor": 4}
  ]})");
  REQUIRE(config.schedule.size() == 5);
  CHECK_FALSE(config.auto_schedule);
  CHECK(op_at<spgen::ReorderOp>(config, 0).order == Names{"j", "i", "k"});
  const auto& split = op_at<spgen::SplitOp>(config, 1);
  CHECK(split.var == "i");
  CHECK(split.factor == 32);
  CHECK(split.outer == "io");
  CHECK(split.inner == "ii");
  const auto& parallel = op_at<spgen::ParallelOp>(config, 2);
  CHECK(parallel.var == "io");
  CHECK(parallel.schedule == spgen::OmpSchedule::Guided);
  CHECK(parallel.chunk == 16);
  CHECK(op_at<spgen::VectorizeOp>(config, 3).var == "k");
  const auto& unroll = op_at<spgen::UnrollOp>(config, 4);
  CHECK(unroll.var == "j");
  CHECK(unroll.factor == 4);
  const char* names[] = {"reorder", "split", "parallel", "vectorize", "unroll"};
  const char* described[] = {"reorder(j, i, k)", "split(i, 32 -> io, ii)", "parallel(io, guided, 16)", "vectorize(k)",
                             "unroll(j, 4)"};
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(config.schedule[i].name() == names[i]);
    CHECK(config.schedule[i].index == i);
    CHECK(config.schedule[i].path == "/schedule/" + std::to_string(i));
    CHECK(spgen::describe_schedule_op(config.schedule[i]) == described[i]);
  }
}

TEST_CASE("config: schedule op defaults") {
  Config config = read(R"({"schedule": [
    {"op": "split", "var": "i", "factor": 8},
    {"op": "parallel", "var": "i0"},
    {"op": "parallel", "var": "j", "schedule": "dynamic"},
    {"op": "parallel", "var": "k", "schedule": "static", "chunk": 4}
  ]})");
  const auto& split = op_at<spgen::SplitOp>(config, 0);
  CHECK(split.outer == "i0");
  CHECK(split.inner == "i1");
  const auto& plain = op_at<spgen::ParallelOp>(config, 1);
  CHECK(plain.schedule == spgen::OmpSchedule::Static);
  CHECK(plain.chunk == 0);
  CHECK(op_at<spgen::ParallelOp>(config, 2).schedule == spgen::OmpSchedule::Dynamic);
  CHECK(op_at<spgen::ParallelOp>(config, 2).chunk == 0);
  CHECK(op_at<spgen::ParallelOp>(config, 3).schedule == spgen::OmpSchedule::Static);
  CHECK(op_at<spgen::ParallelOp>(config, 3).chunk == 4);
  CHECK(spgen::describe_schedule_op(config.schedule[0]) == "split(i, 8 -> i0, i1)");
  CHECK(spgen::describe_schedule_op(config.schedule[1]) == "parallel(i0, static)");
  CHECK(spgen::describe_schedule_op(config.schedule[2]) == "parallel(j, dynamic)");
  CHECK(spgen::describe_schedule_op(config.schedule[3]) == "parallel(k, static, 4)");
}

TEST_CASE("config: \"auto\" and an empty schedule") {
  Config automatic = read(R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(automatic.auto_schedule);
  CHECK(automatic.schedule.empty());
  Config empty = read(R"({"schedule": []})");
  CHECK_FALSE(empty.auto_schedule);
  CHECK(empty.schedule.empty());
}

TEST_CASE("config: fail_schedule_op names the op and its path") {
  Config config = read(R"({"schedule": [{"op": "vectorize", "var": "k"}, {"op": "parallel", "var": "z"}]})");
  try {
    spgen::fail_schedule_op(config, config.schedule[1], "no loop named z");
    FAIL("fail_schedule_op returned");
  } catch (const CompileError& e) {
    CHECK(std::string(e.what()) == config_error("/schedule/1", "parallel: no loop named z"));
  }
}

// ---------------------------------------------------------------------------------------------
// Errors: JSON syntax and the top level

TEST_CASE("config error: invalid JSON gives line:col") {
  std::string single = error_of(R"({"name": })");
  CAPTURE(single);
  CHECK(starts_with(single, "config.json:1:10: error: invalid JSON: syntax error"));
  CHECK(single.find("unexpected '}'") != std::string::npos);
  CHECK(single.back() == '\n');
  std::string multi = error_of("{\n  \"name\": \"a\",\n  \"x\" 1}");
  CAPTURE(multi);
  CHECK(starts_with(multi, "config.json:3:7: error: invalid JSON: syntax error"));
  CHECK(starts_with(error_of(""), "config.json:1:1: error: invalid JSON: syntax error"));
  CHECK(starts_with(error_of(R"({"name": "a")"), "config.json:1:13: error: invalid JSON: syntax error"));
  CHECK(starts_with(error_of("{\n  \"name\": \"a\",\n}"), "config.json:3:1: error: invalid JSON: syntax error"));
  CHECK(starts_with(error_of("{} {}"), "config.json:1:4: error: invalid JSON: syntax error"));
  CHECK(starts_with(error_of("{\"name\": 'a'}"), "config.json:1:10: error: invalid JSON: syntax error"));
  // Comments are not JSON.
  CHECK(starts_with(error_of("// x\n{}"), "config.json:1:1: error: invalid JSON"));
}

TEST_CASE("config error: a number too large for a double gives line:col of the number, not an internal error") {
  CHECK(error_of(R"({"name": "a", "description": 21e308147483648})") ==
        "config.json:1:30: error: invalid JSON: number overflow parsing '21e308147483648'\n");
  CHECK(error_of("{\n  \"tensors\": {\"A\": {\"block\": [-1e999, 2]}}}") ==
        "config.json:2:31: error: invalid JSON: number overflow parsing '-1e999'\n");
}

TEST_CASE("config error: the top level must be an object") {
  CHECK(error_of("[]") == config_error("/", "expected an object, found array"));
  CHECK(error_of("\"csr\"") == config_error("/", "expected an object, found string"));
  CHECK(error_of("null") == config_error("/", "expected an object, found null"));
  CHECK(error_of("3") == config_error("/", "expected an object, found number"));
}

TEST_CASE("config error: unknown top-level key") {
  CHECK(error_of(R"({"nam": "x"})") ==
        config_error("/nam", "unknown key \"nam\" (expected one of: name, description, target, types, sizes, specialize, variants, tensors, "
                             "schedule, tuned, factor)"));
  CHECK(starts_with(error_of(R"({"name": "k", "format": "csr"})"), "config.json: /format: error: unknown key \"format\""));
}

TEST_CASE("config error: wrong types") {
  CHECK(error_of(R"({"name": 1})") == config_error("/name", "expected a string, found number"));
  CHECK(error_of(R"({"name": null})") == config_error("/name", "expected a string, found null"));
  CHECK(error_of(R"({"description": true})") == config_error("/description", "expected a string, found boolean"));
  CHECK(error_of(R"({"target": ["cpu"]})") == config_error("/target", "expected a string, found array"));
  CHECK(error_of(R"({"types": "float32"})") == config_error("/types", "expected an object, found string"));
  CHECK(error_of(R"({"types": {"value": 32}})") == config_error("/types/value", "expected a string, found number"));
  CHECK(error_of(R"({"types": {"index": {}}})") == config_error("/types/index", "expected a string, found object"));
  CHECK(error_of(R"({"types": {"values": "float32"}})") ==
        config_error("/types/values", "unknown key \"values\" (expected one of: value, index)"));
  CHECK(error_of(R"({"tensors": ["A"]})") == config_error("/tensors", "expected an object, found array"));
  CHECK(error_of(R"({"tensors": {"A": "csr"}})") == config_error("/tensors/A", "expected an object, found string"));
  CHECK(error_of(R"({"tensors": {"A": {"fmt": "csr"}}})") ==
        config_error("/tensors/A/fmt", "unknown key \"fmt\" (expected one of: format, width, block, interleave, sigma, structure, temporary)"));
}

TEST_CASE("config error: unknown target, value type, index type") {
  CHECK(error_of(R"({"target": "gpu"})") == config_error("/target", "unknown target \"gpu\" (expected \"cpu\" or \"cuda\")"));
  CHECK(error_of(R"({"target": "CPU"})") == config_error("/target", "unknown target \"CPU\" (expected \"cpu\" or \"cuda\")"));
  CHECK(error_of(R"({"types": {"value": "float16"}})") ==
        config_error("/types/value", "unknown value type \"float16\" (expected \"float32\" or \"float64\")"));
  CHECK(error_of(R"({"types": {"value": "double"}})") ==
        config_error("/types/value", "unknown value type \"double\" (expected \"float32\" or \"float64\")"));
  CHECK(error_of(R"({"types": {"index": "int16"}})") ==
        config_error("/types/index", "unknown index type \"int16\" (expected \"int32\" or \"int64\")"));
}

TEST_CASE("config error: bad kernel name") {
  CHECK(error_of(R"({"name": "my kernel"})") ==
        config_error("/name", "kernel name \"my kernel\" is not a C identifier (set \"name\" in the config)"));
  CHECK(error_of(R"({"name": "int"})") ==
        config_error("/name", "kernel name \"int\" is reserved (a C++ keyword or an spgen prefix); choose another"));
  CHECK(error_of(R"({"name": "main"})") ==
        config_error("/name", "kernel name \"main\" is reserved (a C++ keyword or an spgen prefix); choose another"));
  CHECK(error_of(R"({"name": "1abc"})") ==
        config_error("/name", "kernel name \"1abc\" is not a C identifier (set \"name\" in the config)"));
  CHECK(error_of(R"({"name": ""})") ==
        config_error("/name", "kernel name \"\" is not a C identifier (set \"name\" in the config)"));
  CHECK(error_of(R"({"name": "spmv-csr"})") ==
        config_error("/name", "kernel name \"spmv-csr\" is not a C identifier (set \"name\" in the config)"));
  // A default name (the spec file's stem) that is not an identifier is reported at the top level.
  CHECK(error_of("{}", kSpmm, "my-spec") ==
        config_error("/", "kernel name \"my-spec\" is not a C identifier (set \"name\" in the config)"));
  CHECK(error_of("{}", kSpmm, "2mm") ==
        config_error("/", "kernel name \"2mm\" is not a C identifier (set \"name\" in the config)"));
  // A C library function's name would clash with its declaration in the generated file's includes
  // (a spec named exp.spg), in each of its forms; a name that merely starts like one is fine.
  const std::string clash = " is a function of the C library, which the generated file includes: its entry point would clash "
                            "with it (set \"name\" in the config)";
  CHECK(error_of("{}", kSpmm, "exp") == config_error("/", "kernel name \"exp\" (the spec file's name)" + clash));
  CHECK(error_of(R"({"name": "logf"})") == config_error("/name", "kernel name \"logf\"" + clash));
  CHECK(error_of(R"({"name": "memcpy"})") == config_error("/name", "kernel name \"memcpy\"" + clash));
  CHECK(error_of(R"({"name": "omp_get_num_threads"})") == config_error("/name", "kernel name \"omp_get_num_threads\"" + clash));
  const spgen::ast::Spec spec = spgen::parse_spec("spec.spg", kSpmm);
  CHECK_NOTHROW(spgen::read_config("config.json", R"({"name": "exp_rows"})", spec, "kernel"));
  CHECK_NOTHROW(spgen::read_config("config.json", "{}", spec, "explain"));
}

// ---------------------------------------------------------------------------------------------
// Errors: tensors and formats

TEST_CASE("config error: a tensor that is not in the spec") {
  CHECK(error_of(R"({"tensors": {"Q": {"format": "csr"}}})") ==
        config_error("/tensors/Q", "tensor Q does not appear in the spec (its tensors are: C, A, B)"));
  CHECK(error_of(R"({"tensors": {"a": {}}})", kSpmv) ==
        config_error("/tensors/a", "tensor a does not appear in the spec (its tensors are: y, A, x)"));
  // Index variables are not tensors.
  CHECK(error_of(R"({"tensors": {"i": {}}})", kTtv) ==
        config_error("/tensors/i", "tensor i does not appear in the spec (its tensors are: A, B, c)"));
}

TEST_CASE("config error: unknown format") {
  std::string message = format_error("A", "\"cssr\"");
  CHECK(starts_with(message, "config.json: /tensors/A/format: error: unknown format \"cssr\""));
  CHECK(message == config_error("/tensors/A/format",
                                "unknown format \"cssr\" (expected dense, csr, csc, dcsr, dcsc, csf, sv, coo, ell, "
                                "ragged, bsr, sell, or {\"levels\": [...], \"order\": [...]})"));
  CHECK(starts_with(format_error("A", "\"CSR\""), "config.json: /tensors/A/format: error: unknown format \"CSR\""));
  CHECK(starts_with(format_error("A", "\"\""), "config.json: /tensors/A/format: error: unknown format \"\""));
  CHECK(format_error("A", "7") ==
        config_error("/tensors/A/format",
                     "expected a format name or {\"levels\": [...], \"order\": [...]}, found number"));
  CHECK(format_error("A", "[\"dense\", \"compressed\"]") ==
        config_error("/tensors/A/format",
                     "expected a format name or {\"levels\": [...], \"order\": [...]}, found array"));
}

TEST_CASE("config error: a shorthand on a tensor of the wrong order") {
  CHECK(format_error("B", "\"csr\"", kTtv) ==
        config_error("/tensors/B/format", "format \"csr\" needs an order-2 tensor, but B has order 3 in the spec"));
  CHECK(format_error("c", "\"dcsc\"", kTtv) ==
        config_error("/tensors/c/format", "format \"dcsc\" needs an order-2 tensor, but c has order 1 in the spec"));
  CHECK(format_error("A", "\"sv\"") ==
        config_error("/tensors/A/format", "format \"sv\" needs an order-1 tensor, but A has order 2 in the spec"));
  CHECK(format_error("A", "\"sparse-vector\"") ==
        config_error("/tensors/A/format",
                     "format \"sparse-vector\" needs an order-1 tensor, but A has order 2 in the spec"));
  CHECK(format_error("x", "\"csf\"", kSpmv) ==
        config_error("/tensors/x/format", "format \"csf\" needs a tensor of order 2 or more, but x has order 1"));
  CHECK(format_error("a", "\"csf\"", kDot) ==
        config_error("/tensors/a/format", "format \"csf\" needs a tensor of order 2 or more, but a has order 0"));
  CHECK(format_error("a", "\"csr\"", kDot) ==
        config_error("/tensors/a/format", "format \"csr\" needs an order-2 tensor, but a has order 0 in the spec"));
}

TEST_CASE("config error: explicit levels") {
  CHECK(format_error("A", R"({"levels": ["dense"]})") ==
        config_error("/tensors/A/format/levels", "tensor A has order 2 in the spec but 1 levels here"));
  CHECK(format_error("B", R"({"levels": ["dense", "compressed"], "order": [0, 1]})", kTtv) ==
        config_error("/tensors/B/format/levels", "tensor B has order 3 in the spec but 2 levels here"));
  CHECK(format_error("A", R"({"levels": ["dense", "dense", "dense"]})") ==
        config_error("/tensors/A/format/levels", "tensor A has order 2 in the spec but 3 levels here"));
  CHECK(format_error("A", R"({"order": [0, 1]})") == config_error("/tensors/A/format", "missing \"levels\""));
  CHECK(format_error("A", R"({"levels": "dense"})") ==
        config_error("/tensors/A/format/levels", "expected an array of level kinds, found string"));
  CHECK(format_error("A", R"({"levels": ["dense", 1]})") ==
        config_error("/tensors/A/format/levels/1", "expected a string, found number"));
  CHECK(format_error("A", R"({"levels": ["dense", "compressed"], "modes": [1, 0]})") ==
        config_error("/tensors/A/format/modes", "unknown key \"modes\" (expected one of: levels, order)"));
}

TEST_CASE("config error: unknown level kinds") {
  const std::string expected =
      " (expected dense, compressed, compressed-nonunique, singleton, dense-variable or sparse-fixed, or the "
      "SparseTIR names dense-fixed and sparse-variable)";
  CHECK(format_error("A", R"({"levels": ["dense", "sparse"]})") ==
        config_error("/tensors/A/format/levels/1", "unknown level kind \"sparse\"" + expected));
  CHECK(format_error("A", R"({"levels": ["Dense", "compressed"]})") ==
        config_error("/tensors/A/format/levels/0", "unknown level kind \"Dense\"" + expected));
}

TEST_CASE("COO, ELL and ragged formats: shorthands and explicit levels") {
  using L = spgen::LevelKind;
  spgen::Config coo = read(R"({"tensors": {"A": {"format": "coo"}}})");
  CHECK(coo.format_of("A").levels == std::vector<L>{L::CompressedNonUnique, L::Singleton});
  spgen::Config coo3 = read(R"({"tensors": {"B": {"format": "coo"}}})", kTtv);
  CHECK(coo3.format_of("B").levels == std::vector<L>{L::CompressedNonUnique, L::Singleton, L::Singleton});
  spgen::Config ell = read(R"({"tensors": {"A": {"format": "ell", "width": 8}}})");
  CHECK(ell.format_of("A").levels == std::vector<L>{L::Dense, L::SparseFixed});
  CHECK(ell.format_of("A").width(1) == 8);
  CHECK(read(R"({"tensors": {"A": {"format": "ragged"}}})").format_of("A").levels ==
        std::vector<L>{L::Dense, L::DenseVariable});
  spgen::Config levels = read(R"({"tensors": {"A": {"format": {"levels": ["dense", {"kind": "sparse-fixed", "width": 4}], "order": [1, 0]}}}})");
  CHECK(levels.format_of("A").levels == std::vector<L>{L::Dense, L::SparseFixed});
  CHECK(levels.format_of("A").width(1) == 4);
  CHECK(levels.format_of("A").mode_order == std::vector<int>{1, 0});
  CHECK(read(R"({"tensors": {"A": {"format": {"levels": ["dense", "ragged"]}}}})").format_of("A").levels ==
        std::vector<L>{L::Dense, L::DenseVariable});
}

TEST_CASE("config error: COO, ELL and ragged misuse") {
  CHECK(format_error("A", R"({"levels": ["dense", "singleton"]})") ==
        config_error("/tensors/A/format/levels/1", "a singleton level must follow a compressed-nonunique or singleton level"));
  CHECK(format_error("A", R"({"levels": ["compressed-nonunique", "compressed"]})") ==
        config_error("/tensors/A/format/levels/1", "a compressed-nonunique level must be followed by a singleton level"));
  CHECK(format_error("A", R"({"levels": ["dense", "sparse-fixed"]})") ==
        config_error("/tensors/A/format/levels/1", "a sparse-fixed level needs a width: {\"kind\": \"sparse-fixed\", \"width\": N}"));
  CHECK(format_error("A", R"({"levels": ["dense", {"kind": "compressed", "width": 2}]})") ==
        config_error("/tensors/A/format/levels/1/width", "only a sparse-fixed level has a width"));
  CHECK(format_error("A", R"({"levels": ["dense", {"kind": "sparse-fixed", "width": 0}]})") ==
        config_error("/tensors/A/format/levels/1/width", "expected a positive integer, found 0"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "ell"}}})") ==
        config_error("/tensors/A", "format \"ell\" needs \"width\": the number of entries stored per row"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "csr", "width": 4}}})") ==
        config_error("/tensors/A/width", "\"width\" belongs to the \"ell\" format"));
  CHECK(format_error("x", "\"coo\"", kSpmv) ==
        config_error("/tensors/x/format", "format \"coo\" needs a tensor of order 2 or more, but x has order 1"));
  // Below a COO segment: dense and compressed levels, nothing else.
  CHECK(format_error("B", R"({"levels": ["compressed-nonunique", "singleton", {"kind": "sparse-fixed", "width": 2}]})", kTtv) ==
        config_error("/tensors/B/format/levels/2",
                     "only dense and compressed levels may lie below a COO segment (compressed-nonunique, singletons)"));
  CHECK(format_error("B", R"({"levels": ["compressed-nonunique", "singleton", "dense-variable"]})", kTtv) ==
        config_error("/tensors/B/format/levels/2",
                     "only dense and compressed levels may lie below a COO segment (compressed-nonunique, singletons)"));
}

TEST_CASE("config error: order not a permutation") {
  const std::string levels = R"({"levels": ["dense", "compressed"], "order": )";
  CHECK(format_error("A", levels + "[0, 2]}") ==
        config_error("/tensors/A/format/order/1", "mode 2 is out of range for order-2 tensor A"));
  CHECK(format_error("A", levels + "[-1, 0]}") ==
        config_error("/tensors/A/format/order/0", "mode -1 is out of range for order-2 tensor A"));
  CHECK(format_error("A", levels + "[0, 1, 2]}") ==
        config_error("/tensors/A/format/order/2", "mode 2 is out of range for order-2 tensor A"));
  CHECK(format_error("A", levels + "[18446744073709551615, 0]}") ==
        config_error("/tensors/A/format/order/0", "mode 18446744073709551615 is out of range for order-2 tensor A"));
  CHECK(format_error("A", levels + "[0, 0]}") == config_error("/tensors/A/format/order/1", "mode 0 is listed twice"));
  CHECK(format_error("B", R"({"levels": ["dense", "dense", "dense"], "order": [2, 1, 2]})", kTtv) ==
        config_error("/tensors/B/format/order/2", "mode 2 is listed twice"));
  CHECK(format_error("A", levels + "[1]}") ==
        config_error("/tensors/A/format/order", "expected a permutation of 2 modes, found 1"));
  CHECK(format_error("A", levels + "[]}") ==
        config_error("/tensors/A/format/order", "expected a permutation of 2 modes, found 0"));
  CHECK(format_error("A", levels + "\"10\"}") ==
        config_error("/tensors/A/format/order", "expected an array of mode numbers, found string"));
  CHECK(format_error("A", levels + "[0, \"1\"]}") ==
        config_error("/tensors/A/format/order/1", "expected a mode number, found string"));
  CHECK(format_error("A", levels + "[0, 1.0]}") ==
        config_error("/tensors/A/format/order/1", "expected a mode number, found number"));
}

// ---------------------------------------------------------------------------------------------
// Errors: the schedule

TEST_CASE("config error: schedule not a list") {
  CHECK(error_of(R"({"schedule": {"op": "split"}})") ==
        config_error("/schedule", "expected a list of schedule ops or \"auto\", found object"));
  CHECK(error_of(R"({"schedule": "fast"})") ==
        config_error("/schedule", "expected a list of schedule ops or \"auto\", found \"fast\""));
  CHECK(error_of(R"({"schedule": 1})") ==
        config_error("/schedule", "expected a list of schedule ops or \"auto\", found number"));
  CHECK(error_of(R"({"schedule": ["auto"]})") ==
        config_error("/schedule/0", "\"auto\" in a list follows a decompose op alone (each part is then scheduled by auto); "
                                    "write \"schedule\": \"auto\" for the whole kernel"));
  CHECK(error_of(R"({"schedule": ["tile"]})") == config_error("/schedule/0", "expected an object, found string"));
}

TEST_CASE("config error: op missing, not a string, unknown") {
  const char* ops = "reorder, split, tile, fuse, parallel, vectorize, unroll, precompute, bind, cache, prefetch, batch or decompose";
  CHECK(op_error(R"({"var": "i"})") == config_error("/schedule/0", "missing \"op\" (" + std::string(ops) + ")"));
  CHECK(error_of(R"({"schedule": [{"op": "vectorize", "var": "k"}, {}]})") ==
        config_error("/schedule/1", "missing \"op\" (" + std::string(ops) + ")"));
  CHECK(op_error(R"({"op": 3})") == config_error("/schedule/0/op", "expected a string, found number"));
  CHECK(op_error(R"({"op": "tiles", "var": "i"})") ==
        config_error("/schedule/0/op", "unknown schedule op \"tiles\" (expected " + std::string(ops) + ")"));
  CHECK(error_of(R"({"schedule": [{"op": "vectorize", "var": "k"}, {"op": "interchange"}]})") ==
        config_error("/schedule/1/op", "unknown schedule op \"interchange\" (expected " + std::string(ops) + ")"));
}

TEST_CASE("config: tile and precompute") {
  Config config = read(R"({"schedule": [
    {"op": "tile", "var": "k", "factor": 16, "into": ["ko", "ki"]},
    {"op": "precompute", "var": "ki"},
    {"op": "tile", "var": "i", "factor": 4}
  ]})");
  const auto& tile = op_at<spgen::TileOp>(config, 0);
  CHECK(tile.var == "k");
  CHECK(tile.factor == 16);
  CHECK(tile.outer == "ko");
  CHECK(tile.inner == "ki");
  CHECK(op_at<spgen::PrecomputeOp>(config, 1).var == "ki");
  CHECK(op_at<spgen::TileOp>(config, 2).outer == "i0");
  CHECK(spgen::describe_schedule_op(config.schedule[0]) == "tile(k, 16 -> ko, ki)");
  CHECK(spgen::describe_schedule_op(config.schedule[1]) == "precompute(ki)");
  CHECK(config.schedule[1].name() == "precompute");
  CHECK(op_error(R"({"op": "tile", "var": "k", "factor": 0})") ==
        config_error("/schedule/0/factor", "expected a positive integer, found 0"));
  CHECK(op_error(R"({"op": "tile", "var": "k"})") == config_error("/schedule/0", "missing \"factor\""));
  CHECK(op_error(R"({"op": "tile", "var": "k", "factor": 4, "into": ["a", "a"]})") ==
        config_error("/schedule/0/into", "outer and inner loops need different names"));
  CHECK(op_error(R"({"op": "precompute"})") == config_error("/schedule/0", "missing \"var\""));
  CHECK(op_error(R"({"op": "precompute", "var": "k", "tensor": "C"})") ==
        config_error("/schedule/0/tensor", "unknown key \"tensor\" (expected one of: op, var)"));
}

TEST_CASE("config error: reorder fields") {
  const std::string needs = "reorder needs \"order\": a non-empty list of loop variables";
  CHECK(op_error(R"({"op": "reorder"})") == config_error("/schedule/0/order", needs));
  CHECK(op_error(R"({"op": "reorder", "order": []})") == config_error("/schedule/0/order", needs));
  CHECK(op_error(R"({"op": "reorder", "order": "ij"})") == config_error("/schedule/0/order", needs));
  CHECK(op_error(R"({"op": "reorder", "order": ["i", 1]})") ==
        config_error("/schedule/0/order/1", "expected a string, found number"));
}

TEST_CASE("config error: split fields") {
  CHECK(op_error(R"({"op": "split", "factor": 4})") == config_error("/schedule/0", "missing \"var\""));
  CHECK(op_error(R"({"op": "split", "var": 1, "factor": 4})") ==
        config_error("/schedule/0/var", "expected a string, found number"));
  CHECK(op_error(R"({"op": "split", "var": "1i", "factor": 4})") ==
        config_error("/schedule/0/var", "\"1i\" is not a valid loop variable name"));
  CHECK(op_error(R"({"op": "split", "var": "i"})") == config_error("/schedule/0", "missing \"factor\""));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 0})") ==
        config_error("/schedule/0/factor", "expected a positive integer, found 0"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": -3})") ==
        config_error("/schedule/0/factor", "expected a positive integer, found -3"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 2.5})") ==
        config_error("/schedule/0/factor", "expected an integer, found number"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": "4"})") ==
        config_error("/schedule/0/factor", "expected an integer, found string"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 18446744073709551615})") ==
        config_error("/schedule/0/factor", "integer 18446744073709551615 is too large"));
  const std::string two = "expected two names [outer, inner]";
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["i0"]})") == config_error("/schedule/0/into", two));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["a", "b", "c"]})") ==
        config_error("/schedule/0/into", two));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": "i0"})") == config_error("/schedule/0/into", two));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["io", "io"]})") ==
        config_error("/schedule/0/into", "outer and inner loops need different names"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["i-0", "i1"]})") ==
        config_error("/schedule/0/into/0", "not a valid loop variable name"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["i0", ""]})") ==
        config_error("/schedule/0/into/1", "not a valid loop variable name"));
  CHECK(op_error(R"({"op": "split", "var": "i", "factor": 4, "into": ["i0", 1]})") ==
        config_error("/schedule/0/into/1", "expected a string, found number"));
}

TEST_CASE("config error: parallel fields") {
  CHECK(op_error(R"({"op": "parallel"})") == config_error("/schedule/0", "missing \"var\""));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "schedule": "auto"})") ==
        config_error("/schedule/0/schedule",
                     "unknown OpenMP schedule \"auto\" (expected static, dynamic, guided or even_rows)"));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "schedule": 1})") ==
        config_error("/schedule/0/schedule", "expected a string, found number"));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "chunk": -1})") ==
        config_error("/schedule/0/chunk", "expected a positive integer, found -1"));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "chunk": 0})") ==
        config_error("/schedule/0/chunk", "expected a positive integer, found 0"));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 1.5})") ==
        config_error("/schedule/0/chunk", "expected an integer, found number"));
}

TEST_CASE("config error: vectorize and unroll fields") {
  CHECK(op_error(R"({"op": "vectorize"})") == config_error("/schedule/0", "missing \"var\""));
  CHECK(op_error(R"({"op": "vectorize", "var": "k k"})") ==
        config_error("/schedule/0/var", "\"k k\" is not a valid loop variable name"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "lanes": 0})") ==
        config_error("/schedule/0/lanes", "expected a positive integer, found 0"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "lanes": 12})") ==
        config_error("/schedule/0/lanes", "lanes must be a power of two, at least 2 (the vector width in elements: 16 "
                                          "floats for AVX-512)"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "lanes": 1})") ==
        config_error("/schedule/0/lanes", "lanes must be a power of two, at least 2 (the vector width in elements: 16 "
                                          "floats for AVX-512)"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "tail": "masked"})") ==
        config_error("/schedule/0/tail", "\"tail\" belongs to a sum in lanes: give \"lanes\" too"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "lanes": 8, "tail": "padded"})") ==
        config_error("/schedule/0/tail", "unknown tail \"padded\" (expected \"masked\" or \"scalar\")"));
  CHECK(op_error(R"({"op": "unroll", "factor": 2})") == config_error("/schedule/0", "missing \"var\""));
  CHECK(op_error(R"({"op": "unroll", "var": "j"})") == config_error("/schedule/0", "missing \"factor\""));
  CHECK(op_error(R"({"op": "unroll", "var": "j", "factor": 0})") ==
        config_error("/schedule/0/factor", "expected a positive integer, found 0"));
  CHECK(op_error(R"({"op": "unroll", "var": "j", "factor": true})") ==
        config_error("/schedule/0/factor", "expected an integer, found boolean"));
}

TEST_CASE("config error: unknown keys inside an op") {
  CHECK(op_error(R"({"op": "split", "var": "i", "by": 4})") ==
        config_error("/schedule/0/by", "unknown key \"by\" (expected one of: op, var, factor, into)"));
  CHECK(op_error(R"({"op": "parallel", "var": "i", "threads": 8})") ==
        config_error("/schedule/0/threads", "unknown key \"threads\" (expected one of: op, var, schedule, chunk, reduction, balance, parts)"));
  CHECK(op_error(R"({"op": "vectorize", "var": "k", "factor": 8})") ==
        config_error("/schedule/0/factor", "unknown key \"factor\" (expected one of: op, var, lanes, tail)"));
  CHECK(op_error(R"({"op": "unroll", "var": "j", "factor": 2, "into": ["a", "b"]})") ==
        config_error("/schedule/0/into", "unknown key \"into\" (expected one of: op, var, factor)"));
  CHECK(op_error(R"({"op": "reorder", "order": ["i"], "var": "i"})") ==
        config_error("/schedule/0/var", "unknown key \"var\" (expected one of: op, order)"));
}

TEST_CASE("BSR: the shorthand and the explicit block maps") {
  using L = spgen::LevelKind;
  using P = spgen::BlockPart;
  spgen::Format bsr = read(R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}}})").format_of("A");
  CHECK(bsr.levels == std::vector<L>{L::Dense, L::Compressed, L::Dense, L::Dense});
  CHECK(bsr.mode_order == std::vector<int>{0, 1, 0, 1});
  CHECK(bsr.is_blocked());
  CHECK((bsr.block(0) == spgen::LevelBlock{P::Block, 2}));
  CHECK((bsr.block(1) == spgen::LevelBlock{P::Block, 3}));
  CHECK((bsr.block(2) == spgen::LevelBlock{P::InBlock, 2}));
  CHECK((bsr.block(3) == spgen::LevelBlock{P::InBlock, 3}));
  spgen::Format explicit_levels = format_of("A", R"({"levels": [{"kind": "dense", "floordiv": 2}, {"kind": "compressed", "floordiv": 3},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 3}], "order": [0, 1, 0, 1]})");
  CHECK(explicit_levels.levels == bsr.levels);
  CHECK(explicit_levels.mode_order == bsr.mode_order);
  CHECK(explicit_levels.blocks == bsr.blocks);
  spgen::Format rows = format_of("A", R"({"levels": [{"kind": "dense", "floordiv": 4}, "compressed", {"kind": "dense", "mod": 4}], "order": [0, 1, 0]})");
  CHECK(rows.mode_order == std::vector<int>{0, 1, 0});
  CHECK(!read(R"({"tensors": {"A": {"format": "csr"}}})").format_of("A").is_blocked());
}

TEST_CASE("config: the sell format (SELL-C-sigma)") {
  using L = spgen::LevelKind;
  spgen::Format sell = read(R"({"tensors": {"A": {"format": "sell", "interleave": 8, "sigma": 512}}})").format_of("A");
  CHECK(sell.name == "sell");
  CHECK(sell.levels == std::vector<L>{L::Compressed, L::SparseFixed});
  CHECK(sell.mode_order == std::vector<int>{0, 1});
  CHECK(sell.interleave == 8);
  CHECK(sell.sigma == 512);
  CHECK(sell.sliced);
  CHECK(sell.every_row_listed);
  CHECK(sell.rows_unordered());
  CHECK(sell.lists_every_coordinate(0));  // every row listed: an output by those rows need not be sparse
  CHECK(!sell.lists_every_coordinate(1));
  spgen::Format in_order = read(R"({"tensors": {"A": {"format": "sell", "interleave": 16}}})").format_of("A");
  CHECK(in_order.sigma == 1);
  CHECK(!in_order.rows_unordered());
}

TEST_CASE("config error: the sell format") {
  CHECK(error_of(R"({"tensors": {"A": {"format": "sell"}}})") ==
        config_error("/tensors/A", "format \"sell\" needs \"interleave\": the rows of a slice (a vector's lanes: 8 or 16)"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "sell", "interleave": 65}}})") ==
        config_error("/tensors/A/interleave", "\"interleave\" groups at most 64 rows (a vector's lanes: 8 or 16)"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "sell", "interleave": 8, "sigma": 0}}})") ==
        config_error("/tensors/A/sigma", "expected a positive integer, found 0"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "sell", "interleave": 8, "sigma": 2000000000}}})") ==
        config_error("/tensors/A/sigma", "\"sigma\" sorts windows of at most 2^30 rows"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "csr", "interleave": 8}}})") ==
        config_error("/tensors/A/interleave", "\"interleave\" belongs to the \"sell\" format"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "csr", "sigma": 8}}})") ==
        config_error("/tensors/A/sigma", "\"sigma\" belongs to the \"sell\" format"));
  CHECK(error_of(R"({"tensors": {"C": {"format": "sell", "interleave": 8}}})") ==
        config_error("/tensors/C/format", "format \"sell\" is an input format: spgen does not assemble it (give C csr, or leave its format out)"));
  CHECK(format_error("c", "\"sell\"", kTtv) ==
        config_error("/tensors/c/format", "format \"sell\" needs an order-2 tensor, but c has order 1 in the spec"));
}

TEST_CASE("config error: BSR and block maps") {
  CHECK(error_of(R"({"tensors": {"A": {"format": "bsr"}}})") ==
        config_error("/tensors/A", "format \"bsr\" needs \"block\": [rows, columns], the size of each block"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "csr", "block": [2, 2]}}})") ==
        config_error("/tensors/A/block", "\"block\" belongs to the \"bsr\" format"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "bsr", "block": [2]}}})") ==
        config_error("/tensors/A/block", "expected [rows, columns]: the size of each block, found [2]"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "bsr", "block": [2, 0]}}})") ==
        config_error("/tensors/A/block/1", "expected a positive integer, found 0"));
  CHECK(error_of(R"({"tensors": {"A": {"format": "bsr", "block": [4000000000, 2]}}})") ==
        config_error("/tensors/A/block/0", "a block size of 4000000000 is too large (at most 65536)"));
  CHECK(error_of(R"({"tensors": {"A": {"format": {"levels": [{"kind": "dense", "floordiv": 70000}, "compressed",
        {"kind": "dense", "mod": 70000}], "order": [0, 1, 0]}}}})") ==
        config_error("/tensors/A/format/levels/0/floordiv", "a block size of 70000 is too large (at most 65536)"));
  CHECK(format_error("c", "\"bsr\"", kTtv) ==
        config_error("/tensors/c/format", "format \"bsr\" needs an order-2 tensor, but c has order 1 in the spec"));
  const std::string d4 = R"({"kind": "dense", "floordiv": 4})", c4 = R"({"kind": "compressed", "floordiv": 4})";
  const std::string m4 = R"({"kind": "dense", "mod": 4})";
  CHECK(format_error("A", R"({"levels": [)" + d4 + ", " + c4 + ", " + m4 + ", " + m4 + "]}") ==
        config_error("/tensors/A/format", "a format with floordiv/mod levels needs \"order\": the mode each level stores"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + ", " + c4 + ", " + m4 + ", " + m4 + R"(], "order": [0, 1]})") ==
        config_error("/tensors/A/format/order", "expected one mode per level (4), found 2"));
  CHECK(format_error("A", R"({"levels": [{"kind": "dense", "floordiv": 4, "mod": 4}, "compressed"]})") ==
        config_error("/tensors/A/format/levels/0", "a level stores its mode floordiv B or mod B, not both"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + R"(, "compressed", {"kind": "compressed", "mod": 4}], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels/2/kind", "a mod (in-block) level must be dense: blocks are stored whole"));
  CHECK(format_error("A", R"({"levels": [{"kind": "singleton", "floordiv": 4}, "compressed", )" + m4 + R"(], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels/0/kind", "a floordiv (block) level must be dense or compressed, not singleton"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + R"(, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels/2/mod", "mode 0 is split with floordiv 4 but mod 2; they must match"));
  CHECK(format_error("A", R"({"levels": [)" + m4 + R"(, "compressed", )" + d4 + R"(], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels/0", "the mod 4 level of mode 0 must come below a floordiv 4 level of the same mode"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + ", " + m4 + R"(, "compressed"], "order": [0, 0, 1]})") ==
        config_error("/tensors/A/format/levels/2", "in-block (mod) levels must come after every other level: blocks are stored whole"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + R"(, "compressed"], "order": [0, 1]})") ==
        config_error("/tensors/A/format/levels/0", "mode 0 has a floordiv level but no mod level of the same size"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + R"(, "compressed", "dense"], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels/2", "mode 0 is stored by more than one level that is not its floordiv/mod pair"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + ", " + c4 + ", " + m4 + R"(], "order": [0, 0, 0]})") ==
        config_error("/tensors/A/format/levels/1", "mode 0 is stored by more than one level that is not its floordiv/mod pair"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + R"(, "dense", )" + m4 + R"(], "order": [0, 1, 0]})") ==
        config_error("/tensors/A/format/levels", "a blocked format needs a compressed level; all-dense blocked storage is not supported (use dense)"));
  CHECK(format_error("A", R"({"levels": [)" + d4 + ", " + m4 + R"(], "order": [0, 0]})") ==
        config_error("/tensors/A/format/order", "mode 1 of A is stored by no level"));
}
