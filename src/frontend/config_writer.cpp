#include "frontend/config_writer.h"

#include <type_traits>

namespace spgen {

using json = nlohmann::ordered_json;

namespace {

json op_fields(const ReorderOp& op) { return {{"op", "reorder"}, {"order", op.order}}; }
json op_fields(const SplitOp& op) {
  return {{"op", "split"}, {"var", op.var}, {"factor", op.factor}, {"into", {op.outer, op.inner}}};
}
json op_fields(const TileOp& op) {
  return {{"op", "tile"}, {"var", op.var}, {"factor", op.factor}, {"into", {op.outer, op.inner}}};
}
json op_fields(const PrecomputeOp& op) { return {{"op", "precompute"}, {"var", op.var}}; }
json op_fields(const ParallelOp& op) {
  json j = {{"op", "parallel"}, {"var", op.var}, {"schedule", omp_schedule_name(op.schedule)}};
  if (op.chunk > 0) j["chunk"] = op.chunk;
  if (!op.reduction.empty()) j["reduction"] = op.reduction;
  if (!op.balance.empty()) j["balance"] = op.balance;
  if (op.parts > 0) j["parts"] = op.parts;
  return j;
}
json op_fields(const VectorizeOp& op) {
  json j = {{"op", "vectorize"}, {"var", op.var}};
  if (op.lanes > 0) j["lanes"] = op.lanes;
  if (op.masked_tail) j["tail"] = "masked";
  return j;
}
json op_fields(const UnrollOp& op) { return {{"op", "unroll"}, {"var", op.var}, {"factor", op.factor}}; }
json op_fields(const BindOp& op) {
  json j = {{"op", "bind"}, {"var", op.var}, {"to", op.to}};
  if (!op.reduction.empty()) j["reduction"] = op.reduction;
  if (op.threads > 0) j["threads"] = op.threads;
  return j;
}
json op_fields(const FuseOp& op) { return {{"op", "fuse"}, {"vars", op.vars}, {"into", op.into}}; }
json op_fields(const DecomposeOp& op) {
  json j = {{"op", "decompose"}, {"tensor", op.tensor}, {"format", op.format}};
  if (op.format == "hyb") {
    j["partitions"] = op.partitions;
    j["buckets"] = op.buckets;
  } else if (op.format == "ell+coo") {
    j["width"] = op.width;
  } else if (op.format == "bsr+csr" || op.format == "bsr") {
    j["block"] = {op.block_rows, op.block_cols};
    if (op.format == "bsr+csr") j["fill"] = op.fill;
  }
  if (op.interleave > 0) j["interleave"] = op.interleave;
  if (op.format == "sell") j["sigma"] = op.sigma;
  return j;
}
json op_fields(const CacheOp& op) { return {{"op", "cache"}, {"tensor", op.tensor}, {"at", op.var}}; }
json op_fields(const PrefetchOp& op) {
  return {{"op", "prefetch"}, {"tensor", op.tensor}, {"at", op.var}, {"distance", op.distance}};
}

json op_fields(const BatchOp& op) {
  json fields = {{"op", "batch"}, {"var", op.var}};
  if (op.factor > 0) fields["factor"] = op.factor;  // (none: by the dot products' length)
  return fields;
}

}  // namespace

json schedule_op_json(const ScheduleOp& op) {
  json j = std::visit([](const auto& o) { return op_fields(o); }, op.op);
  if (!op.part.empty()) j["part"] = op.part;
  return j;
}

json variants_json(const std::vector<RowLengthVariant>& variants) {
  json list = json::array();
  for (const RowLengthVariant& v : variants)
    list.push_back({{"min_entries_per_row", v.min_entries_per_row}, {"schedule", schedule_json(v.schedule)}});
  return list;
}

json schedule_json(const std::vector<ScheduleOp>& ops) {
  json list = json::array();
  for (const ScheduleOp& op : ops) list.push_back(schedule_op_json(op));
  return list;
}

namespace {

std::string compact(const json& v) {
  if (v.is_object()) {
    std::string text = "{";
    for (auto it = v.begin(); it != v.end(); ++it)
      text += (it == v.begin() ? "" : ", ") + json(it.key()).dump() + ": " + compact(it.value());
    return text + "}";
  }
  if (v.is_array()) {
    std::string text = "[";
    for (size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + compact(v[i]);
    return text + "]";
  }
  return v.dump();
}

// `v` at `indent`, after `lead` ("\"key\": ") on its line.
std::string pretty(const json& v, size_t indent, size_t lead) {
  std::string one_line = compact(v);
  if ((!v.is_object() && !v.is_array()) || v.empty() || indent + lead + one_line.size() <= 100) return one_line;
  const std::string pad(indent + 2, ' ');
  std::string text = v.is_object() ? "{\n" : "[\n";
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    std::string key = v.is_object() ? json(it.key()).dump() + ": " : "";
    text += pad + key + pretty(it.value(), indent + 2, key.size()) + (i + 1 < v.size() ? ",\n" : "\n");
  }
  return text + std::string(indent, ' ') + (v.is_object() ? "}" : "]");
}

}  // namespace

std::string format_config_json(const json& config) { return pretty(config, 0, 0) + "\n"; }

}  // namespace spgen
