#include "frontend/schedule_reader.h"

#include "frontend/config_json_reader.h"

#include <algorithm>
#include <cmath>
#include <variant>

namespace spgen {

namespace {

class ScheduleReader : public ConfigJsonReader {
 public:
  using ConfigJsonReader::ConfigJsonReader;

  void read_schedule(const json& schedule, Config& config) const {
    if (schedule.is_string()) {
      if (schedule.get<std::string>() != "auto")
        fail("/schedule", "expected a list of schedule ops or \"auto\", found \"" + schedule.get<std::string>() + "\"");
      config.auto_schedule = true;
      return;
    }
    if (!schedule.is_array()) fail("/schedule", "expected a list of schedule ops or \"auto\", found " + type_name(schedule));
    // [decompose, "auto"]: the parts of a decomposition each scheduled by `auto`.
    size_t ops = schedule.size();
    if (ops > 0 && schedule.back().is_string() && schedule.back().get<std::string>() == "auto") {
      if (ops != 2 || !schedule[0].is_object() || !schedule[0].contains("op") || schedule[0]["op"] != "decompose")
        fail("/schedule/" + std::to_string(ops - 1), "\"auto\" in a list follows a decompose op alone (each part is then "
                                                     "scheduled by auto); write \"schedule\": \"auto\" for the whole kernel");
      config.auto_schedule = true;
      --ops;
    }
    for (size_t i = 0; i < ops; ++i) config.schedule.push_back(read_op(schedule[i], static_cast<int>(i), "/schedule/"));
    // A decomposition changes which loops exist, so it comes first; the ops after it may name a part.
    bool decomposed = false;
    for (const ScheduleOp& op : config.schedule) {
      if (std::holds_alternative<DecomposeOp>(op.op)) {
        if (op.index != 0) fail(op.path, "decompose: must be the first schedule op (the ops after it schedule its parts)");
        decomposed = true;
      } else if (!op.part.empty() && !decomposed && ast::terms_by_summed_vars(spec_).size() < 2) {
        fail(op.path + "/part", "\"part\" names a part of a decomposition, but no decompose op comes first (or of a sum "
                                "whose terms sum over different indices, which this right-hand side is not)");
      }
    }
  }

  std::string get_var(const json& op, const std::string& path) const {
    if (!op.contains("var")) fail(path, "missing \"var\"");
    std::string var = get_string(op["var"], path + "/var");
    if (!is_c_identifier(var)) fail(path + "/var", "\"" + var + "\" is not a valid loop variable name");
    return var;
  }

  // "variants": up to 4 kernels for rows of at least so many stored entries on average, each
  // with its own list of ops (no decompose: a variant schedules the same loops).
  void read_variants(const json& variants, Config& config) const {
    if (!variants.is_array() || variants.size() > 4)
      fail("/variants", "expected a list of at most 4 variants, found " +
                            (variants.is_array() ? "a list of " + std::to_string(variants.size()) : type_name(variants)));
    if (!variants.empty() && config.target == Target::Cuda)
      fail("/variants", "the cuda target does not take \"variants\" yet");
    for (size_t k = 0; k < variants.size(); ++k) {
      const std::string path = "/variants/" + std::to_string(k);
      expect_object(variants[k], path);
      check_keys(variants[k], path, {"min_entries_per_row", "schedule"});
      if (!variants[k].contains("min_entries_per_row")) fail(path, "missing \"min_entries_per_row\"");
      if (!variants[k].contains("schedule")) fail(path, "missing \"schedule\" (a list of ops)");
      RowLengthVariant variant;
      variant.path = path;
      variant.min_entries_per_row = get_positive_int(variants[k]["min_entries_per_row"], path + "/min_entries_per_row");
      const json& ops = variants[k]["schedule"];
      if (!ops.is_array()) fail(path + "/schedule", "expected a list of schedule ops, found " + type_name(ops));
      for (size_t i = 0; i < ops.size(); ++i) {
        variant.schedule.push_back(read_op(ops[i], static_cast<int>(i), path + "/schedule/"));
        if (std::holds_alternative<DecomposeOp>(variant.schedule.back().op))
          fail(variant.schedule.back().path, "decompose: a variant schedules the kernel's own loops; decompose in \"schedule\"");
      }
      for (const RowLengthVariant& other : config.row_variants)
        if (other.min_entries_per_row == variant.min_entries_per_row)
          fail(path + "/min_entries_per_row", "another variant has the same threshold");
      config.row_variants.push_back(std::move(variant));
    }
    std::sort(config.row_variants.begin(), config.row_variants.end(),
              [](const RowLengthVariant& a, const RowLengthVariant& b) { return a.min_entries_per_row > b.min_entries_per_row; });
  }

  ScheduleOp read_op(const json& given, int index, const std::string& prefix) const {
    std::string path = prefix + std::to_string(index);
    expect_object(given, path);
    if (!given.contains("op"))
      fail(path, "missing \"op\" (reorder, split, tile, fuse, parallel, vectorize, unroll, precompute, bind, cache, prefetch, batch or decompose)");
    std::string kind = get_string(given["op"], path + "/op");
    ScheduleOp result;
    result.index = index;
    result.path = path;
    // Any op but decompose itself may be limited to one part of a decomposition.
    json op = given;
    if (op.contains("part") && kind != "decompose") {
      result.part = get_string(op["part"], path + "/part");
      if (!is_c_identifier(result.part)) fail(path + "/part", "\"" + result.part + "\" is not a part name");
      op.erase("part");
    }
    if (kind == "decompose") {
      result.op = read_decompose(op, path);
    } else if (kind == "reorder") {
      check_keys(op, path, {"op", "order"});
      if (!op.contains("order") || !op["order"].is_array() || op["order"].empty())
        fail(path + "/order", "reorder needs \"order\": a non-empty list of loop variables");
      ReorderOp reorder;
      for (size_t i = 0; i < op["order"].size(); ++i)
        reorder.order.push_back(get_string(op["order"][i], path + "/order/" + std::to_string(i)));
      result.op = reorder;
    } else if (kind == "split" || kind == "tile") {
      check_keys(op, path, {"op", "var", "factor", "into"});
      SplitOp split;
      split.var = get_var(op, path);
      if (!op.contains("factor")) fail(path, "missing \"factor\"");
      split.factor = get_positive_int(op["factor"], path + "/factor");
      if (op.contains("into")) {
        const json& into = op["into"];
        if (!into.is_array() || into.size() != 2)
          fail(path + "/into", "expected two names [outer, inner]");
        split.outer = get_string(into[0], path + "/into/0");
        split.inner = get_string(into[1], path + "/into/1");
        for (int k = 0; k < 2; ++k)
          if (!is_c_identifier(k ? split.inner : split.outer))
            fail(path + "/into/" + std::to_string(k), "not a valid loop variable name");
        if (split.outer == split.inner) fail(path + "/into", "outer and inner loops need different names");
      } else {
        split.outer = split.var + "0";
        split.inner = split.var + "1";
      }
      if (kind == "split") result.op = split;
      else result.op = TileOp{split.var, split.factor, split.outer, split.inner};
    } else if (kind == "precompute") {
      check_keys(op, path, {"op", "var"});
      result.op = PrecomputeOp{get_var(op, path)};
    } else if (kind == "parallel") {
      check_keys(op, path, {"op", "var", "schedule", "chunk", "reduction", "balance", "parts"});
      ParallelOp parallel;
      parallel.var = get_var(op, path);
      if (op.contains("schedule")) {
        std::string name = get_string(op["schedule"], path + "/schedule");
        if (name == "static") parallel.schedule = OmpSchedule::Static;
        else if (name == "dynamic") parallel.schedule = OmpSchedule::Dynamic;
        else if (name == "guided") parallel.schedule = OmpSchedule::Guided;
        else if (name == "even_rows") parallel.schedule = OmpSchedule::EvenRows;
        else fail(path + "/schedule", "unknown OpenMP schedule \"" + name + "\" (expected static, dynamic, guided or even_rows)");
      }
      if (op.contains("chunk")) parallel.chunk = get_positive_int(op["chunk"], path + "/chunk");
      if (op.contains("reduction")) {
        parallel.reduction = get_string(op["reduction"], path + "/reduction");
        if (parallel.reduction != "atomic" && parallel.reduction != "privatize")
          fail(path + "/reduction", "unknown reduction strategy \"" + parallel.reduction + "\" (expected atomic or privatize)");
      }
      if (op.contains("balance")) {
        parallel.balance = get_string(op["balance"], path + "/balance");
        if (parallel.balance != "nonzeros" && parallel.balance != "merge_path")
          fail(path + "/balance", "unknown balance \"" + parallel.balance + "\" (expected nonzeros or merge_path)");
      }
      if (op.contains("parts")) {
        if (parallel.balance.empty()) fail(path + "/parts", "\"parts\" needs a \"balance\"");
        parallel.parts = get_positive_int(op["parts"], path + "/parts");
      }
      if (!parallel.balance.empty() && op.contains("chunk"))
        fail(path + "/chunk", "a balanced loop's parts are its chunks: set \"parts\" instead of \"chunk\"");
      result.op = parallel;
    } else if (kind == "vectorize") {
      check_keys(op, path, {"op", "var", "lanes", "tail"});
      VectorizeOp vectorize{get_var(op, path)};
      if (op.contains("lanes")) {
        vectorize.lanes = get_positive_int(op["lanes"], path + "/lanes");
        if (vectorize.lanes < 2 || (vectorize.lanes & (vectorize.lanes - 1)) != 0)
          fail(path + "/lanes", "lanes must be a power of two, at least 2 (the vector width in elements: 16 floats "
                                "for AVX-512)");
      }
      if (op.contains("tail")) {
        const std::string tail = get_string(op["tail"], path + "/tail");
        if (tail != "masked" && tail != "scalar")
          fail(path + "/tail", "unknown tail \"" + tail + "\" (expected \"masked\" or \"scalar\")");
        if (!vectorize.lanes) fail(path + "/tail", "\"tail\" belongs to a sum in lanes: give \"lanes\" too");
        vectorize.masked_tail = tail == "masked";
      }
      result.op = vectorize;
    } else if (kind == "unroll") {
      check_keys(op, path, {"op", "var", "factor"});
      UnrollOp unroll;
      unroll.var = get_var(op, path);
      if (!op.contains("factor")) fail(path, "missing \"factor\"");
      unroll.factor = get_positive_int(op["factor"], path + "/factor");
      result.op = unroll;
    } else if (kind == "bind") {
      check_keys(op, path, {"op", "var", "to", "reduction", "threads"});
      BindOp bind;
      bind.var = get_var(op, path);
      if (!op.contains("to")) fail(path, "missing \"to\" (blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y or warp)");
      bind.to = get_string(op["to"], path + "/to");
      static const char* const kIndices[] = {"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "warp"};
      if (std::find(std::begin(kIndices), std::end(kIndices), bind.to) == std::end(kIndices))
        fail(path + "/to", "unknown GPU index \"" + bind.to + "\" (expected blockIdx.x, blockIdx.y, threadIdx.x, "
                           "threadIdx.y or warp)");
      if (op.contains("reduction")) {
        bind.reduction = get_string(op["reduction"], path + "/reduction");
        if (bind.reduction != "shuffle" && bind.reduction != "shared" && bind.reduction != "atomic")
          fail(path + "/reduction",
               "unknown reduction strategy \"" + bind.reduction + "\" (expected shuffle, shared or atomic)");
      }
      if (op.contains("threads")) {
        if (bind.to != "threadIdx.x" && bind.to != "threadIdx.y")
          fail(path + "/threads", "only a loop bound to threadIdx.x or threadIdx.y takes a thread count (a warp has 32 "
                                  "lanes; blocks come from the trip count)");
        bind.threads = get_positive_int(op["threads"], path + "/threads");
        if (bind.threads > 1024) fail(path + "/threads", "a block has at most 1024 threads");
      }
      result.op = bind;
    } else if (kind == "cache") {
      check_keys(op, path, {"op", "tensor", "at"});
      CacheOp cache;
      cache.tensor = read_input_tensor(op, path, "cache", "the dense input to keep in shared memory", "cached").name;
      if (!op.contains("at")) fail(path, "cache: missing \"at\" (the loop whose iterations each copy their tile)");
      cache.var = get_string(op["at"], path + "/at");
      if (!is_c_identifier(cache.var)) fail(path + "/at", "\"" + cache.var + "\" is not a valid loop variable name");
      result.op = cache;
    } else if (kind == "prefetch") {
      check_keys(op, path, {"op", "tensor", "at", "distance"});
      PrefetchOp prefetch;
      prefetch.tensor = read_input_tensor(op, path, "prefetch", "the dense input whose rows to prefetch", "prefetched").name;
      if (!op.contains("at")) fail(path, "prefetch: missing \"at\" (the loop over a sparse level whose coordinates pick the rows)");
      prefetch.var = get_string(op["at"], path + "/at");
      if (!is_c_identifier(prefetch.var)) fail(path + "/at", "\"" + prefetch.var + "\" is not a valid loop variable name");
      if (op.contains("distance")) prefetch.distance = get_positive_int(op["distance"], path + "/distance");
      result.op = prefetch;
    } else if (kind == "batch") {
      check_keys(op, path, {"op", "var", "factor"});
      BatchOp batch{get_var(op, path)};
      if (op.contains("factor")) {
        batch.factor = get_positive_int(op["factor"], path + "/factor");
        if (batch.factor != 2 && batch.factor != 4 && batch.factor != 8)
          fail(path + "/factor", "batch: the factor must be 2, 4 or 8 (iterations finished by one tree of vector additions)");
      }
      result.op = batch;
    } else if (kind == "fuse") {
      check_keys(op, path, {"op", "vars", "into"});
      if (!op.contains("vars") || !op["vars"].is_array() || op["vars"].size() != 2)
        fail(path + (op.contains("vars") ? "/vars" : ""), "fuse needs \"vars\": two loop names [outer, inner]");
      FuseOp fuse;
      for (size_t k = 0; k < 2; ++k) {
        std::string at = path + "/vars/" + std::to_string(k);
        fuse.vars.push_back(get_string(op["vars"][k], at));
        if (!is_c_identifier(fuse.vars.back())) fail(at, "\"" + fuse.vars.back() + "\" is not a valid loop variable name");
      }
      if (fuse.vars[0] == fuse.vars[1]) fail(path + "/vars", "fuse needs two different loops");
      if (!op.contains("into")) fail(path, "missing \"into\" (the fused loop's name)");
      fuse.into = get_string(op["into"], path + "/into");
      if (!is_c_identifier(fuse.into)) fail(path + "/into", "\"" + fuse.into + "\" is not a valid loop variable name");
      result.op = fuse;
    } else {
      fail(path + "/op", "unknown schedule op \"" + kind + "\" (expected reorder, split, tile, fuse, parallel, vectorize, unroll, "
                         "precompute, bind, cache, prefetch, batch or decompose)");
    }
    return result;
  }

  // An op's "tensor": an input of the spec. `what` describes it where it is missing; `done` is
  // what the op does to it ("cached").
  const ast::TensorUse& read_input_tensor(const json& op, const std::string& path, const std::string& op_name,
                                          const std::string& what, const std::string& done) const {
    if (!op.contains("tensor")) fail(path, op_name + ": missing \"tensor\" (" + what + ")");
    std::string name = get_string(op["tensor"], path + "/tensor");
    const ast::TensorUse* use = spec_.find_tensor(name);
    if (!use) fail(path + "/tensor", op_name + ": the spec has no tensor \"" + name + "\"");
    if (use->is_output) fail(path + "/tensor", op_name + ": " + name + " is the output; only an input can be " + done);
    return *use;
  }

  DecomposeOp read_decompose(const json& op, const std::string& path) const {
    check_keys(op, path, {"op", "tensor", "format", "partitions", "buckets", "width", "block", "fill", "interleave", "sigma"});
    DecomposeOp d;
    const ast::TensorUse* use = &read_input_tensor(op, path, "decompose", "the sparse input to decompose", "decomposed");
    d.tensor = use->name;
    if (use->order != 2)
      fail(path + "/tensor", "decompose: " + d.tensor + " has order " + std::to_string(use->order) + "; only matrices are decomposed");
    if (!op.contains("format")) fail(path, "decompose: missing \"format\" (hyb, ell+coo, bsr+csr, bsr or sell)");
    d.format = get_string(op["format"], path + "/format");
    // Each format's parameters, and only those.
    auto only = [&](std::initializer_list<const char*> keys) {
      for (const char* key : {"partitions", "buckets", "width", "block", "fill", "interleave", "sigma"})
        if (op.contains(key) && std::find_if(keys.begin(), keys.end(), [&](const char* k) { return std::string(k) == key; }) == keys.end())
          fail(path + "/" + key, std::string("decompose: \"") + key + "\" does not apply to format \"" + d.format + "\"");
    };
    if (d.format == "hyb") {
      only({"partitions", "buckets", "interleave"});
      if (op.contains("partitions")) d.partitions = get_positive_int(op["partitions"], path + "/partitions");
      if (d.partitions > 64) fail(path + "/partitions", "decompose: at most 64 partitions");
      if (op.contains("buckets")) {
        const json& buckets = op["buckets"];
        if (!buckets.is_array() || buckets.empty() || buckets.size() > 16)
          fail(path + "/buckets", "decompose: \"buckets\" must be a list of 1 to 16 ELL widths, e.g. [1, 2, 4, 8]");
        for (size_t b = 0; b < buckets.size(); ++b) {
          std::string at = path + "/buckets/" + std::to_string(b);
          int64_t width = get_positive_int(buckets[b], at);
          if ((width & (width - 1)) != 0 || width > 4096) fail(at, "decompose: a bucket width must be a power of two up to 4096");
          if (!d.buckets.empty() && width <= d.buckets.back()) fail(at, "decompose: bucket widths must increase");
          d.buckets.push_back(width);
        }
      } else {
        d.buckets = {1, 2, 4, 8, 16, 32};
      }
    } else if (d.format == "ell+coo") {
      only({"width", "interleave"});
      if (!op.contains("width")) fail(path, "decompose: format \"ell+coo\" needs \"width\": the ELL part's entries per row");
      d.width = get_positive_int(op["width"], path + "/width");
      if (d.width > 4096) fail(path + "/width", "decompose: the ELL width must be at most 4096");
    } else if (d.format == "bsr+csr" || d.format == "bsr") {
      // (bsr: every occupied block, so no entry is left for another part and "fill" does not apply)
      if (d.format == "bsr") only({"block"});
      else only({"block", "fill"});
      const json* block = op.contains("block") ? &op["block"] : nullptr;
      if (!block || !block->is_array() || block->size() != 2)
        fail(path + (block ? "/block" : ""), "decompose: format \"" + d.format + "\" needs \"block\": [rows, cols]");
      d.block_rows = get_positive_int((*block)[0], path + "/block/0");
      d.block_cols = get_positive_int((*block)[1], path + "/block/1");
      if (d.block_rows * d.block_cols > 4096) fail(path + "/block", "decompose: a block may hold at most 4096 entries");
      if (op.contains("fill")) {
        if (!op["fill"].is_number()) fail(path + "/fill", "expected a number, found " + type_name(op["fill"]));
        d.fill = op["fill"].get<double>();
        if (!(d.fill > 0 && d.fill <= 1)) fail(path + "/fill", "decompose: \"fill\" must be in (0, 1]: the share of a block's entries that must be stored for it to go to the BSR part");
      }
    } else if (d.format == "sell") {
      only({"interleave", "sigma"});
      if (!op.contains("interleave"))
        fail(path, "decompose: format \"sell\" needs \"interleave\": the rows of a slice (a vector's lanes: 8 or 16)");
      if (op.contains("sigma")) {
        d.sigma = get_positive_int(op["sigma"], path + "/sigma");
        if (d.sigma > (int64_t{1} << 30)) fail(path + "/sigma", "decompose: \"sigma\" sorts windows of at most 2^30 rows");
      }
    } else {
      fail(path + "/format", "decompose: unknown format \"" + d.format + "\" (expected hyb, ell+coo, bsr+csr, bsr or sell)");
    }
    if (op.contains("interleave")) {
      d.interleave = get_positive_int(op["interleave"], path + "/interleave");
      if (d.interleave > 64) fail(path + "/interleave", "decompose: \"interleave\" groups at most 64 rows (a vector's lanes: 8 or 16)");
    }
    return d;
  }
};

}  // namespace

void read_schedule(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const nlohmann::json& schedule, Config& config) {
  ScheduleReader(file, text, spec).read_schedule(schedule, config);
}

void read_variants(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const nlohmann::json& variants, Config& config) {
  ScheduleReader(file, text, spec).read_variants(variants, config);
}

}  // namespace spgen
