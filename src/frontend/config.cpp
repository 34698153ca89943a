#include "frontend/config.h"

#include "frontend/config_json_reader.h"
#include "frontend/parser.h"
#include "frontend/schedule_reader.h"
#include "support/c_library_names.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

namespace spgen {

using json = nlohmann::json;

const char* level_kind_name(LevelKind kind) {
  switch (kind) {
    case LevelKind::Dense: return "dense";
    case LevelKind::Compressed: return "compressed";
    case LevelKind::CompressedNonUnique: return "compressed-nonunique";
    case LevelKind::Singleton: return "singleton";
    case LevelKind::DenseVariable: return "dense-variable";
    case LevelKind::SparseFixed: return "sparse-fixed";
  }
  return "?";
}

bool level_has_pos(LevelKind kind) {
  return kind == LevelKind::Compressed || kind == LevelKind::CompressedNonUnique || kind == LevelKind::DenseVariable;
}

bool level_has_crd(LevelKind kind) {
  return kind == LevelKind::Compressed || kind == LevelKind::CompressedNonUnique || kind == LevelKind::Singleton ||
         kind == LevelKind::SparseFixed;
}

const char* value_type_name(ValueType type) { return type == ValueType::Float32 ? "float32" : "float64"; }
const char* index_type_name(IndexType type) { return type == IndexType::Int32 ? "int32" : "int64"; }
const char* omp_schedule_name(OmpSchedule schedule) {
  switch (schedule) {
    case OmpSchedule::Static: return "static";
    case OmpSchedule::Dynamic: return "dynamic";
    case OmpSchedule::Guided: return "guided";
    case OmpSchedule::EvenRows: return "even_rows";
  }
  return "static";
}

bool Format::all_dense() const {
  return std::all_of(levels.begin(), levels.end(), [](LevelKind k) { return k == LevelKind::Dense; });
}

bool Format::is_blocked() const {
  return std::any_of(blocks.begin(), blocks.end(), [](const LevelBlock& b) { return b.part != BlockPart::None; });
}

bool Format::stores_padding() const {
  if (is_blocked()) return true;
  bool under_sparse = false;
  for (LevelKind kind : levels) {
    if (kind == LevelKind::SparseFixed || (kind == LevelKind::Dense && under_sparse)) return true;
    under_sparse |= kind != LevelKind::Dense;
  }
  return false;
}

bool Format::is_row_major_dense() const {
  for (size_t l = 0; l < mode_order.size(); ++l)
    if (mode_order[l] != static_cast<int>(l)) return false;
  return all_dense();
}

Format sell_format(int64_t interleave, int64_t sigma) {
  Format sell{"sell", {LevelKind::Compressed, LevelKind::SparseFixed}, {0, 1}, {0, 0}, {}, interleave};
  sell.sliced = true;
  sell.every_row_listed = true;
  sell.sigma = sigma;
  return sell;
}

Format dense_format(int order) {
  Format format{"dense", std::vector<LevelKind>(order, LevelKind::Dense), {}};
  for (int m = 0; m < order; ++m) format.mode_order.push_back(m);
  return format;
}

Format auto_input_format(int order) {
  const LevelKind D = LevelKind::Dense, C = LevelKind::Compressed;
  if (order == 0) return dense_format(0);
  if (order == 1) return Format{"sv", {C}, {0}};
  if (order == 2) return Format{"csr", {D, C}, {0, 1}};
  Format format{"csf", std::vector<LevelKind>(order, C), {}};
  for (int m = 0; m < order; ++m) format.mode_order.push_back(m);
  return format;
}

std::string ScheduleOp::name() const {
  static const char* names[] = {"reorder", "split", "parallel", "vectorize", "unroll", "bind", "tile", "precompute", "fuse", "decompose", "cache", "prefetch", "batch"};
  return names[op.index()];
}

std::string describe_schedule_op(const ScheduleOp& op) {
  struct Describe {
    std::string operator()(const ReorderOp& r) const {
      std::string out = "reorder(";
      for (size_t i = 0; i < r.order.size(); ++i) out += (i ? ", " : "") + r.order[i];
      return out + ")";
    }
    std::string operator()(const SplitOp& s) const {
      return "split(" + s.var + ", " + std::to_string(s.factor) + " -> " + s.outer + ", " + s.inner + ")";
    }
    std::string operator()(const TileOp& t) const {
      return "tile(" + t.var + ", " + std::to_string(t.factor) + " -> " + t.outer + ", " + t.inner + ")";
    }
    std::string operator()(const PrecomputeOp& p) const { return "precompute(" + p.var + ")"; }
    std::string operator()(const ParallelOp& p) const {
      return "parallel(" + p.var + ", " + omp_schedule_name(p.schedule) +
             (p.chunk ? ", " + std::to_string(p.chunk) : "") + (p.reduction.empty() ? "" : ", reduction " + p.reduction) +
             (p.balance.empty() ? "" : ", balance " + p.balance + (p.parts ? " " + std::to_string(p.parts) : "")) + ")";
    }
    std::string operator()(const VectorizeOp& v) const {
      return "vectorize(" + v.var + (v.lanes ? ", " + std::to_string(v.lanes) + " lanes" : "") + (v.masked_tail ? ", masked tail" : "") + ")";
    }
    std::string operator()(const UnrollOp& u) const { return "unroll(" + u.var + ", " + std::to_string(u.factor) + ")"; }
    std::string operator()(const BindOp& b) const {
      return "bind(" + b.var + ", " + b.to + (b.reduction.empty() ? "" : ", " + b.reduction) +
             (b.threads ? ", " + std::to_string(b.threads) + " threads" : "") + ")";
    }
    std::string operator()(const CacheOp& c) const { return "cache(" + c.tensor + " at " + c.var + ")"; }
    std::string operator()(const PrefetchOp& p) const {
      return "prefetch(" + p.tensor + " at " + p.var + ", " + std::to_string(p.distance) + " ahead)";
    }
    std::string operator()(const BatchOp& b) const {
      return "batch(" + b.var + (b.factor > 0 ? ", " + std::to_string(b.factor) : "") + ")";
    }
    std::string operator()(const FuseOp& f) const { return "fuse(" + f.vars[0] + ", " + f.vars[1] + " -> " + f.into + ")"; }
    std::string operator()(const DecomposeOp& d) const {
      std::string out = "decompose(" + d.tensor + ", " + d.format;
      if (d.format == "hyb") {
        out += ", partitions " + std::to_string(d.partitions) + ", buckets";
        for (int64_t b : d.buckets) out += " " + std::to_string(b);
      }
      if (d.format == "ell+coo") out += ", width " + std::to_string(d.width);
      if (d.format == "bsr" || d.format == "bsr+csr") out += ", block " + std::to_string(d.block_rows) + "x" + std::to_string(d.block_cols);
      if (d.format == "bsr+csr") {
        char fill[32];
        std::snprintf(fill, sizeof fill, "%g", d.fill);
        out += std::string(", fill ") + fill;
      }
      if (d.format == "sell")
        out += ", slices of " + std::to_string(d.interleave) + ", sorted in windows of " + std::to_string(d.sigma);
      else if (d.interleave > 0)
        out += ", interleaved by " + std::to_string(d.interleave);
      return out + ")";
    }
  };
  std::string text = std::visit(Describe{}, op.op);
  return op.part.empty() ? text : text + " on part " + op.part;
}

std::string schedule_op_error(const Config& config, const ScheduleOp& op, const std::string& message) {
  return format_config_error(config.file, op.path, op.name() + ": " + message);
}

void fail_schedule_op(const Config& config, const ScheduleOp& op, const std::string& message) {
  throw CompileError(schedule_op_error(config, op, message));
}

namespace {

class ConfigReader : public ConfigJsonReader {
 public:
  ConfigReader(const std::string& file, const std::string& text, const ast::Spec& spec, const std::map<std::string, Format>* written)
      : ConfigJsonReader(file, text, spec), written_(written) {}

  Config run(const std::string& default_name, std::optional<Target> target, const std::map<std::string, int64_t>& sizes) {
    json root = parse();
    Config config;
    config.file = file_;
    expect_object(root, "");
    check_keys(root, "", {"name", "description", "target", "types", "sizes", "specialize", "variants", "tensors", "schedule", "tuned", "factor"});
    config.name = root.contains("name") ? get_string(root["name"], "/name") : default_name;
    if (!is_c_identifier(config.name))
      fail(root.contains("name") ? "/name" : "", "kernel name \"" + config.name +
                                                     "\" is not a C identifier (set \"name\" in the config)");
    if (is_reserved_name(config.name))
      fail(root.contains("name") ? "/name" : "", "kernel name \"" + config.name +
                                                     "\" is reserved (a C++ keyword or an spgen prefix); choose another");
    if (is_c_library_name(config.name))
      fail(root.contains("name") ? "/name" : "", "kernel name \"" + config.name + "\"" + (root.contains("name") ? "" : " (the spec file's name)") +
                                                 " is a function of the C library, which the generated file includes: its entry point "
                                                 "would clash with it (set \"name\" in the config)");
    if (root.contains("description")) get_string(root["description"], "/description");
    // What `spgen tune` measured (docs/tune.md): a record for people, not read by the compiler.
    if (root.contains("tuned")) expect_object(root["tuned"], "/tuned");
    if (root.contains("factor")) {
      if (!root["factor"].is_boolean()) fail("/factor", "expected true or false, found " + type_name(root["factor"]));
      config.factor = root["factor"].get<bool>();
    }
    if (root.contains("target")) config.target = read_target(root["target"]);
    if (target) config.target = *target;
    if (root.contains("types")) read_types(root["types"], config);
    if (root.contains("sizes")) read_sizes(root["sizes"], config);
    if (root.contains("specialize")) read_specialize(root["specialize"], config);
    for (const auto& [var, size] : sizes) {  // the command line's --size replaces the config's
      const std::string flag = "spgen: error: --size " + var + "=" + std::to_string(size) + ": ";
      if (!is_index_var(var)) throw CompileError(flag + unknown_index_var(var) + "\n");
      if (size <= 0) throw CompileError(flag + "expected a positive size\n");
      config.sizes[var] = size;
    }
    for (const auto& [var, size] : sizes) config.specialize.erase(var);  // --size fixes it: one kernel
    read_tensors(root.contains("tensors") ? root["tensors"] : json::object(), config);
    if (root.contains("schedule")) read_schedule(file_, text_, spec_, root["schedule"], config);
    if (root.contains("variants")) read_variants(file_, text_, spec_, root["variants"], config);
    return config;
  }

 private:
  json parse() const {
    try {
      return json::parse(text_);
    } catch (const json::parse_error& e) {
      // nlohmann reports a byte offset; turn it into line:col.
      std::string what = e.what();
      size_t detail = what.find("syntax error");
      fail_json_at(e.byte == 0 ? 0 : e.byte - 1, detail == std::string::npos ? what : what.substr(detail));
    } catch (const json::exception& e) {
      // A number too large for a double (out_of_range 406) carries no position: a SAX pass,
      // which reports one with every error, finds the token it refused.
      ErrorLocator locator;
      json::sax_parse(text_, &locator);
      std::string what = e.what();
      size_t detail = what.find("] ");
      fail_json_at(locator.offset, detail == std::string::npos ? what : what.substr(detail + 2));
    }
  }

  [[noreturn]] void fail_json_at(size_t offset, const std::string& message) const {
    SourceLoc loc = location_of_offset(text_, offset);
    throw CompileError(file_ + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": error: invalid JSON: " +
                       message + "\n");
  }

  // Accepts every event and keeps where the first error's token starts.
  struct ErrorLocator : json::json_sax_t {
    size_t offset = 0;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception&) override {
      offset = position >= token.size() ? position - token.size() : 0;
      return false;
    }
  };

  Target read_target(const json& value) const {
    std::string name = get_string(value, "/target");
    if (name == "cpu") return Target::Cpu;
    if (name == "cuda") return Target::Cuda;
    fail("/target", "unknown target \"" + name + "\" (expected \"cpu\" or \"cuda\")");
  }

  void read_types(const json& types, Config& config) const {
    expect_object(types, "/types");
    check_keys(types, "/types", {"value", "index"});
    if (types.contains("value")) {
      std::string name = get_string(types["value"], "/types/value");
      if (name == "float32") config.value_type = ValueType::Float32;
      else if (name == "float64") config.value_type = ValueType::Float64;
      else fail("/types/value", "unknown value type \"" + name + "\" (expected \"float32\" or \"float64\")");
    }
    if (types.contains("index")) {
      std::string name = get_string(types["index"], "/types/index");
      if (name == "int32") config.index_type = IndexType::Int32;
      else if (name == "int64") config.index_type = IndexType::Int64;
      else fail("/types/index", "unknown index type \"" + name + "\" (expected \"int32\" or \"int64\")");
    }
  }

  // "sizes": {"k": 32}: index variables whose size the kernel is specialized for.
  void read_sizes(const json& sizes, Config& config) const {
    expect_object(sizes, "/sizes");
    for (auto it = sizes.begin(); it != sizes.end(); ++it) {
      const std::string path = "/sizes/" + it.key();
      if (!is_index_var(it.key())) fail(path, unknown_index_var(it.key()));
      config.sizes[it.key()] = get_positive_int(it.value(), path);
    }
  }

  // "specialize": {"k": [16, 32, 64]}: one index variable, and up to 8 distinct sizes of it,
  // each of which gets a kernel of its own.
  void read_specialize(const json& specialize, Config& config) const {
    expect_object(specialize, "/specialize");
    config.specialize_given = true;
    if (specialize.size() > 1)
      fail("/specialize", "specializes " + std::to_string(specialize.size()) +
                              " index variables; give one (the variants of several would multiply)");
    for (auto it = specialize.begin(); it != specialize.end(); ++it) {
      const std::string path = "/specialize/" + it.key();
      if (!is_index_var(it.key())) fail(path, unknown_index_var(it.key()));
      if (config.sizes.count(it.key()))
        fail(path, it.key() + " has a fixed size in \"sizes\": there is nothing to choose between");
      if (!it.value().is_array() || it.value().empty() || it.value().size() > 8)
        fail(path, "expected a list of 1 to 8 sizes, found " + (it.value().is_array() ? "a list of " + std::to_string(it.value().size())
                                                                                          : type_name(it.value())));
      std::vector<int64_t> list;
      for (size_t k = 0; k < it.value().size(); ++k) {
        const int64_t size = get_positive_int(it.value()[k], path + "/" + std::to_string(k));
        if (std::find(list.begin(), list.end(), size) != list.end())
          fail(path + "/" + std::to_string(k), "size " + std::to_string(size) + " is listed twice");
        list.push_back(size);
      }
      std::sort(list.begin(), list.end());
      config.specialize[it.key()] = list;
    }
    if (!config.specialize.empty() && config.target == Target::Cuda)
      fail("/specialize", "the cuda target does not take \"specialize\" yet (fix the size with \"sizes\")");
  }

  void read_tensors(const json& tensors, Config& config) const {
    expect_object(tensors, "/tensors");
    for (auto it = tensors.begin(); it != tensors.end(); ++it) {
      std::string path = "/tensors/" + it.key();
      const ast::TensorUse* use = spec_.find_tensor(it.key());
      if (!use) {
        std::string known;
        for (const ast::TensorUse& t : spec_.tensors) known += (known.empty() ? "" : ", ") + t.name;
        fail(path, "tensor " + it.key() + " does not appear in the spec (its tensors are: " + known + ")");
      }
      expect_object(it.value(), path);
      // ("temporary": read_program_config's.)
      check_keys(it.value(), path, {"format", "width", "block", "interleave", "sigma", "structure", "temporary"});
      if (written_ && written_->count(it.key()) && !use->is_output) continue;  // (stored as its statement stored it: below)
      const bool is_auto = it.value().contains("format") && it.value()["format"] == "auto";
      if (is_auto || !it.value().contains("format")) config.infer_output_format |= use->is_output;
      if (is_auto && !use->is_output) config.auto_formats.insert(it.key());
      Format format = it.value().contains("format") && !is_auto ? read_format(it.value()["format"], path + "/format", *use)
                      : is_auto && !use->is_output             ? auto_input_format(use->order)
                                                               : dense_format(use->order);
      if (it.value().contains("width")) {
        int64_t width = get_positive_int(it.value()["width"], path + "/width");
        if (format.name != "ell") fail(path + "/width", "\"width\" belongs to the \"ell\" format");
        format.widths = {0, width};
      } else if (format.name == "ell") {
        fail(path, "format \"ell\" needs \"width\": the number of entries stored per row");
      }
      if (it.value().contains("block")) {
        if (format.name != "bsr") fail(path + "/block", "\"block\" belongs to the \"bsr\" format");
        format = bsr_format(it.value()["block"], path + "/block");
      } else if (format.name == "bsr") {
        fail(path, "format \"bsr\" needs \"block\": [rows, columns], the size of each block");
      }
      if (format.name == "sell") format = read_sell(it.value(), path, *use);
      else
        for (const char* key : {"interleave", "sigma"})
          if (it.value().contains(key)) fail(path + "/" + key, std::string("\"") + key + "\" belongs to the \"sell\" format");
      config.formats[it.key()] = format;
      if (it.value().contains("structure")) read_structure(it.value(), path, *use, config);
    }
    for (const ast::TensorUse& use : spec_.tensors)
      if (written_ && written_->count(use.name) && !use.is_output) {
        config.formats[use.name] = written_->at(use.name);  // as the statement that wrote it stored it
      } else if (!config.formats.count(use.name)) {
        config.formats[use.name] = dense_format(use.order);
        config.infer_output_format |= use.is_output;
      }
    // `+=` reads the output too: its structure cannot come from the operands alone.
    if (spec_.accumulate) config.infer_output_format = false;
    apply_structure(config);
  }

  // SELL-C-sigma's parameters: "interleave" (C, the rows of a slice) and "sigma" (the sort window).
  Format read_sell(const json& entry, const std::string& path, const ast::TensorUse& use) const {
    if (use.is_output)
      fail(path + "/format", "format \"sell\" is an input format: spgen does not assemble it (give " + use.name +
                                 " csr, or leave its format out)");
    if (!entry.contains("interleave"))
      fail(path, "format \"sell\" needs \"interleave\": the rows of a slice (a vector's lanes: 8 or 16)");
    const int64_t interleave = get_positive_int(entry["interleave"], path + "/interleave");
    if (interleave > 64) fail(path + "/interleave", "\"interleave\" groups at most 64 rows (a vector's lanes: 8 or 16)");
    int64_t sigma = 1;
    if (entry.contains("sigma")) {
      sigma = get_positive_int(entry["sigma"], path + "/sigma");
      if (sigma > (int64_t{1} << 30)) fail(path + "/sigma", "\"sigma\" sorts windows of at most 2^30 rows");
    }
    return sell_format(interleave, sigma);
  }

  // "structure": "S" names a sparse input read with the output's own indices; the output takes its
  // format (or must have it already).
  void read_structure(const json& entry, const std::string& tensor_path, const ast::TensorUse& use, Config& config) const {
    const std::string path = tensor_path + "/structure";
    if (!use.is_output) fail(path, "\"structure\" belongs to the output, " + spec_.output.tensor);
    if (!entry["structure"].is_string()) fail(path, "expected the name of a sparse input");
    const std::string structure = entry["structure"].get<std::string>();
    const ast::TensorUse* source = spec_.find_tensor(structure);
    if (!source || source->is_output) fail(path, structure + " is not an input of the spec");
    bool same_indices = false;
    for (const ast::Access* access : ast::collect_accesses(*spec_.rhs)) same_indices |= access->tensor == structure && access->indices == spec_.output.indices;
    if (!same_indices)
      fail(path, structure + " must be read with the output's indices (" + ast::to_string(spec_.output) + "): the output takes its entries");
    if (spec_.accumulate) fail(path, "an output with a structure is written with `=`, not `+=`");
    config.output_structure = structure;
  }

  // The output with a structure is stored as that input is: given that format, or taking it.
  void apply_structure(Config& config) const {
    if (config.output_structure.empty()) return;
    const std::string& structure = config.output_structure;
    const std::string path = "/tensors/" + spec_.output.tensor + "/structure";
    const Format& source = config.format_of(structure);
    if (source.all_dense()) fail(path, structure + " is stored dense: every entry would be evaluated; give it a sparse format");
    if (source.stores_padding())
      fail(path, structure + " stores padding (" + source.name + "): a structure must be stored without it (for now: csr, csc, coo, dcsr, ...)");
    Format& output = config.formats[spec_.output.tensor];
    if (config.infer_output_format) {
      output = source;
      config.infer_output_format = false;
    } else if (output.levels != source.levels || output.mode_order != source.mode_order) {
      fail("/tensors/" + spec_.output.tensor + "/format", spec_.output.tensor + " has the structure of " + structure +
                                                             ", so its format must be " + structure + "'s (" + source.name + "), or left out");
    }
  }

  // TACO's and SparseTIR's names for the same kinds are both accepted.
  static std::optional<LevelKind> level_kind_from_name(const std::string& name) {
    if (name == "dense" || name == "dense-fixed") return LevelKind::Dense;
    if (name == "compressed" || name == "sparse-variable") return LevelKind::Compressed;
    if (name == "compressed-nonunique") return LevelKind::CompressedNonUnique;
    if (name == "singleton") return LevelKind::Singleton;
    if (name == "dense-variable" || name == "ragged") return LevelKind::DenseVariable;
    if (name == "sparse-fixed" || name == "ell") return LevelKind::SparseFixed;
    return std::nullopt;
  }

  // A block is stored whole and dense: keep its size (and a block's entry count) far from
  // overflowing the index arithmetic.
  int64_t get_block_size(const json& value, const std::string& path) const {
    int64_t size = get_positive_int(value, path);
    if (size > kMaxBlockSize)
      fail(path, "a block size of " + std::to_string(size) + " is too large (at most " + std::to_string(kMaxBlockSize) +
                     ")");
    return size;
  }
  static constexpr int64_t kMaxBlockSize = 65536;

  // BSR of a matrix with r x c blocks: block rows (dense), block columns (compressed), then
  // the dense block, row-major.
  Format bsr_format(const json& block, const std::string& path) const {
    if (!block.is_array() || block.size() != 2)
      fail(path, "expected [rows, columns]: the size of each block, found " + block.dump());
    int64_t rows = get_block_size(block[0], path + "/0"), columns = get_block_size(block[1], path + "/1");
    const LevelKind D = LevelKind::Dense, C = LevelKind::Compressed;
    return Format{"bsr", {D, C, D, D}, {0, 1, 0, 1}, {}, {{BlockPart::Block, rows}, {BlockPart::Block, columns},
                                                          {BlockPart::InBlock, rows}, {BlockPart::InBlock, columns}}};
  }

  struct LevelSpec {
    LevelKind kind;
    int64_t width = 0;
    LevelBlock block;
  };

  // A level is a kind name, or {"kind": NAME, "width": N} (the width of a sparse-fixed level),
  // or {"kind": NAME, "floordiv": B} / {"kind": NAME, "mod": B} (a block map of its mode).
  LevelSpec read_level(const json& level, const std::string& path) const {
    std::string name;
    int64_t width = 0;
    LevelBlock block;
    if (level.is_object()) {
      check_keys(level, path, {"kind", "width", "floordiv", "mod"});
      if (!level.contains("kind")) fail(path, "missing \"kind\"");
      name = get_string(level["kind"], path + "/kind");
      if (level.contains("width")) width = get_positive_int(level["width"], path + "/width");
      if (level.contains("floordiv") && level.contains("mod"))
        fail(path, "a level stores its mode floordiv B or mod B, not both");
      if (level.contains("floordiv")) block = {BlockPart::Block, get_block_size(level["floordiv"], path + "/floordiv")};
      if (level.contains("mod")) block = {BlockPart::InBlock, get_block_size(level["mod"], path + "/mod")};
    } else {
      name = get_string(level, path);
    }
    std::optional<LevelKind> kind = level_kind_from_name(name);
    if (!kind)
      fail(path, "unknown level kind \"" + name + "\" (expected dense, compressed, compressed-nonunique, singleton, "
                 "dense-variable or sparse-fixed, or the SparseTIR names dense-fixed and sparse-variable)");
    if (*kind == LevelKind::SparseFixed && width == 0)
      fail(path, "a sparse-fixed level needs a width: {\"kind\": \"sparse-fixed\", \"width\": N}");
    if (*kind != LevelKind::SparseFixed && width != 0) fail(path + "/width", "only a sparse-fixed level has a width");
    if (block.part == BlockPart::Block && *kind != LevelKind::Dense && *kind != LevelKind::Compressed)
      fail(path + "/kind", "a floordiv (block) level must be dense or compressed, not " + name);
    if (block.part == BlockPart::InBlock && *kind != LevelKind::Dense)
      fail(path + "/kind", "a mod (in-block) level must be dense: blocks are stored whole");
    return {*kind, width, block};
  }

  // Block maps: a blocked mode has a floordiv level and, below it, a mod level of the same
  // size; the in-block levels come after every other level (the blocks are dense and whole),
  // and some level is compressed (all-dense blocked storage is just dense).
  void check_block_maps(const Format& format, const std::string& path, const ast::TensorUse& use) const {
    std::vector<int> block_level(use.order, -1), in_block_level(use.order, -1), plain_level(use.order, -1);
    bool compressed_level = false;
    for (size_t l = 0; l < format.levels.size(); ++l) {
      int mode = format.mode_order[l];
      LevelBlock block = format.block(l);
      std::string level_path = path + "/levels/" + std::to_string(l);
      std::vector<int>& slot = block.part == BlockPart::Block     ? block_level
                               : block.part == BlockPart::InBlock ? in_block_level
                                                                  : plain_level;
      if (slot[mode] >= 0 || (block.part == BlockPart::None && (block_level[mode] >= 0 || in_block_level[mode] >= 0)) ||
          (block.part != BlockPart::None && plain_level[mode] >= 0))
        fail(level_path, "mode " + std::to_string(mode) + " is stored by more than one level that is not its "
                         "floordiv/mod pair");
      slot[mode] = static_cast<int>(l);
      if (block.part == BlockPart::InBlock) {
        if (block_level[mode] < 0)
          fail(level_path, "the mod " + std::to_string(block.size) + " level of mode " + std::to_string(mode) +
                               " must come below a floordiv " + std::to_string(block.size) + " level of the same mode");
        if (format.block(block_level[mode]).size != block.size)
          fail(level_path + "/mod", "mode " + std::to_string(mode) + " is split with floordiv " +
                                        std::to_string(format.block(block_level[mode]).size) + " but mod " +
                                        std::to_string(block.size) + "; they must match");
      } else {
        for (int m = 0; m < use.order; ++m)
          if (in_block_level[m] >= 0)
            fail(level_path, "in-block (mod) levels must come after every other level: blocks are stored whole");
      }
      compressed_level |= format.levels[l] == LevelKind::Compressed;
    }
    for (int m = 0; m < use.order; ++m) {
      if (block_level[m] >= 0 && in_block_level[m] < 0)
        fail(path + "/levels/" + std::to_string(block_level[m]),
             "mode " + std::to_string(m) + " has a floordiv level but no mod level of the same size");
      if (block_level[m] < 0 && plain_level[m] < 0)
        fail(path + "/order", "mode " + std::to_string(m) + " of " + use.name + " is stored by no level");
    }
    if (!compressed_level)
      fail(path + "/levels", "a blocked format needs a compressed level; all-dense blocked storage is not "
                             "supported (use dense)");
  }

  // COO's shape: a non-unique level is followed by singletons, and singletons follow nothing else.
  // Below the segment (one position per distinct coordinates of its levels) lie dense or
  // compressed levels, as below any other position.
  void check_level_sequence(const Format& format, const std::string& path) const {
    bool below_segment = false;
    for (size_t l = 0; l < format.levels.size(); ++l) {
      LevelKind kind = format.levels[l];
      LevelKind above = l ? format.levels[l - 1] : LevelKind::Dense;
      bool below_coo = l > 0 && (above == LevelKind::CompressedNonUnique || above == LevelKind::Singleton);
      std::string level_path = path + "/levels/" + std::to_string(l);
      if (kind == LevelKind::Singleton && !below_coo)
        fail(level_path, "a singleton level must follow a compressed-nonunique or singleton level");
      if (above == LevelKind::CompressedNonUnique && kind != LevelKind::Singleton)
        fail(level_path, "a compressed-nonunique level must be followed by a singleton level");
      below_segment |= below_coo && kind != LevelKind::Singleton;
      if (below_segment && kind != LevelKind::Dense && kind != LevelKind::Compressed)
        fail(level_path, "only dense and compressed levels may lie below a COO segment (compressed-nonunique, "
                         "singletons)");
    }
    if (!format.levels.empty() && format.levels.back() == LevelKind::CompressedNonUnique)
      fail(path + "/levels/" + std::to_string(format.levels.size() - 1),
           "the last level cannot be compressed-nonunique (entries would repeat)");
  }

  Format read_format(const json& value, const std::string& path, const ast::TensorUse& use) const {
    if (value.is_string()) return shorthand_format(value.get<std::string>(), path, use);
    if (!value.is_object())
      fail(path, "expected a format name or {\"levels\": [...], \"order\": [...]}, found " + type_name(value));
    check_keys(value, path, {"levels", "order"});
    if (!value.contains("levels")) fail(path, "missing \"levels\"");
    const json& levels = value["levels"];
    if (!levels.is_array()) fail(path + "/levels", "expected an array of level kinds, found " + type_name(levels));
    Format format{"custom", {}, {}};
    for (size_t l = 0; l < levels.size(); ++l) {
      LevelSpec level = read_level(levels[l], path + "/levels/" + std::to_string(l));
      format.levels.push_back(level.kind);
      format.widths.push_back(level.width);
      format.blocks.push_back(level.block);
    }
    if (format.is_blocked()) return read_blocked_order(value, path, use, format);
    format.blocks.clear();
    if (static_cast<int>(format.levels.size()) != use.order)
      fail(path + "/levels", "tensor " + use.name + " has order " + std::to_string(use.order) + " in the spec but " +
                                 std::to_string(format.levels.size()) + " levels here");
    if (value.contains("order")) {
      const json& order = value["order"];
      if (!order.is_array()) fail(path + "/order", "expected an array of mode numbers, found " + type_name(order));
      std::vector<bool> seen(use.order, false);
      for (size_t l = 0; l < order.size(); ++l) {
        std::string mode_path = path + "/order/" + std::to_string(l);
        int mode = read_mode(order[l], mode_path, use);
        if (seen[mode]) fail(mode_path, "mode " + std::to_string(mode) + " is listed twice");
        seen[mode] = true;
        format.mode_order.push_back(static_cast<int>(mode));
      }
      if (static_cast<int>(format.mode_order.size()) != use.order)
        fail(path + "/order", "expected a permutation of " + std::to_string(use.order) + " modes, found " +
                                  std::to_string(format.mode_order.size()));
    } else {
      for (int m = 0; m < use.order; ++m) format.mode_order.push_back(m);
    }
    check_level_sequence(format, path);
    return format;
  }

  // One entry of a format's "order": a mode number of `use`.
  int read_mode(const json& entry, const std::string& path, const ast::TensorUse& use) const {
    if (!entry.is_number_integer()) fail(path, "expected a mode number, found " + type_name(entry));
    int64_t mode = entry.get<int64_t>();
    if (mode < 0 || mode >= use.order)
      fail(path, "mode " + entry.dump() + " is out of range for order-" + std::to_string(use.order) + " tensor " +
                     use.name);
    return static_cast<int>(mode);
  }

  // A blocked format lists, in "order", the mode of each level: a blocked mode twice.
  Format read_blocked_order(const json& value, const std::string& path, const ast::TensorUse& use, Format format) const {
    if (!value.contains("order"))
      fail(path, "a format with floordiv/mod levels needs \"order\": the mode each level stores");
    const json& order = value["order"];
    if (!order.is_array()) fail(path + "/order", "expected an array of mode numbers, found " + type_name(order));
    if (order.size() != format.levels.size())
      fail(path + "/order", "expected one mode per level (" + std::to_string(format.levels.size()) + "), found " +
                                std::to_string(order.size()));
    for (size_t l = 0; l < order.size(); ++l) {
      format.mode_order.push_back(read_mode(order[l], path + "/order/" + std::to_string(l), use));
    }
    check_block_maps(format, path, use);
    return format;
  }

  Format shorthand_format(const std::string& name, const std::string& path, const ast::TensorUse& use) const {
    auto need_order = [&](int order) {
      if (use.order != order)
        fail(path, "format \"" + name + "\" needs an order-" + std::to_string(order) + " tensor, but " + use.name +
                       " has order " + std::to_string(use.order) + " in the spec");
    };
    const LevelKind D = LevelKind::Dense, C = LevelKind::Compressed;
    if (name == "dense") return dense_format(use.order);
    if (name == "csr") return need_order(2), Format{name, {D, C}, {0, 1}};
    if (name == "csc") return need_order(2), Format{name, {D, C}, {1, 0}};
    if (name == "dcsr") return need_order(2), Format{name, {C, C}, {0, 1}};
    if (name == "dcsc") return need_order(2), Format{name, {C, C}, {1, 0}};
    if (name == "sparse-vector" || name == "sv") return need_order(1), Format{name, {C}, {0}};
    if (name == "csf") {
      if (use.order < 2) fail(path, "format \"csf\" needs a tensor of order 2 or more, but " + use.name +
                                        " has order " + std::to_string(use.order));
      Format format{name, std::vector<LevelKind>(use.order, C), {}};
      for (int m = 0; m < use.order; ++m) format.mode_order.push_back(m);
      return format;
    }
    if (name == "coo") {
      if (use.order < 2) fail(path, "format \"coo\" needs a tensor of order 2 or more, but " + use.name +
                                        " has order " + std::to_string(use.order));
      Format format{name, std::vector<LevelKind>(use.order, LevelKind::Singleton), {}};
      format.levels[0] = LevelKind::CompressedNonUnique;
      for (int m = 0; m < use.order; ++m) format.mode_order.push_back(m);
      return format;
    }
    if (name == "ell") return need_order(2), Format{name, {D, LevelKind::SparseFixed}, {0, 1}};  // width: see caller
    if (name == "ragged") return need_order(2), Format{name, {D, LevelKind::DenseVariable}, {0, 1}};
    if (name == "bsr") return need_order(2), Format{name, {}, {}};  // levels: see caller (they need "block")
    if (name == "sell") return need_order(2), Format{name, {}, {}};  // levels: see caller (they need "interleave")
    fail(path, "unknown format \"" + name + "\" (expected dense, csr, csc, dcsr, dcsc, csf, sv, coo, ell, ragged, bsr, sell, "
               "or {\"levels\": [...], \"order\": [...]})");
  }

  const std::map<std::string, Format>* written_;
};

}  // namespace

Config read_config(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const std::string& default_name, std::optional<Target> target,
                   const std::map<std::string, int64_t>& sizes, const std::map<std::string, Format>* written) {
  return ConfigReader(file, text, spec, written).run(default_name, target, sizes);
}

}  // namespace spgen
