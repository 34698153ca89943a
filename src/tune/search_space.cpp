#include "tune/search_space.h"

#include <algorithm>
#include <limits>

namespace spgen::tune {

using json = nlohmann::json;

namespace {

// The parallel schedules tried: libgomp's static, dynamic in chunks from a few rows to thousands
// (rows are cheap in SpMV, dear in SpMM), guided, and ranges of equal nonzero counts for skew,
// rows whole or cut (merge path: a row holding more than a thread's share).
const std::vector<json>& parallel_choices() {
  static const std::vector<json> choices = {
      {{"schedule", "static"}},
      {{"schedule", "dynamic"}, {"chunk", 16}},
      {{"schedule", "dynamic"}, {"chunk", 64}},
      {{"schedule", "dynamic"}, {"chunk", 128}},
      {{"schedule", "dynamic"}, {"chunk", 512}},
      {{"schedule", "dynamic"}, {"chunk", 2048}},
      {{"schedule", "guided"}},
      {{"balance", "nonzeros"}},
      {{"balance", "merge_path"}},
  };
  return choices;
}

std::string parallel_label(const json& v) {
  if (v.contains("balance")) return "balance " + v.at("balance").get<std::string>();
  std::string label = v.at("schedule").get<std::string>();
  if (v.contains("chunk")) label += "," + std::to_string(v.at("chunk").get<int64_t>());
  return label;
}

json parallel_value(const ParallelOp& p) {
  if (!p.balance.empty()) return {{"balance", p.balance}};
  json v = {{"schedule", omp_schedule_name(p.schedule)}};
  if (p.chunk > 0) v["chunk"] = p.chunk;
  return v;
}

// An op the knob adds, at the end of the schedule.
void append(std::vector<ScheduleOp>& ops, decltype(ScheduleOp::op) added) {
  ScheduleOp op;
  op.op = std::move(added);
  op.index = static_cast<int>(ops.size());
  op.path = "/schedule/" + std::to_string(ops.size());
  ops.push_back(std::move(op));
}

void apply(const Knob& knob, const json& value, std::vector<ScheduleOp>& ops) {
  switch (knob.kind) {
    case KnobKind::Parallel: {
      ParallelOp& p = std::get<ParallelOp>(ops[knob.op_index].op);
      p.balance.clear();
      p.parts = 0;
      p.chunk = 0;
      if (value.contains("balance")) {
        p.balance = value.at("balance").get<std::string>();
        p.schedule = OmpSchedule::Static;
      } else {
        const std::string s = value.at("schedule").get<std::string>();
        p.schedule = s == "static" ? OmpSchedule::Static : s == "dynamic" ? OmpSchedule::Dynamic : OmpSchedule::Guided;
        if (value.contains("chunk")) p.chunk = value.at("chunk").get<int64_t>();
      }
      break;
    }
    case KnobKind::TileWidth: std::get<TileOp>(ops[knob.op_index].op).factor = value.get<int64_t>(); break;
    case KnobKind::Lanes: std::get<VectorizeOp>(ops[knob.op_index].op).lanes = value.get<int64_t>(); break;
    case KnobKind::Tail: std::get<VectorizeOp>(ops[knob.op_index].op).masked_tail = value.get<std::string>() == "masked"; break;
    case KnobKind::Prefetch:  // replaces the base's prefetch (auto's SDDMM has one), if any
      ops.erase(std::remove_if(ops.begin(), ops.end(), [](const ScheduleOp& op) { return std::holds_alternative<PrefetchOp>(op.op); }),
                ops.end());
      if (!value.is_null())
        append(ops, PrefetchOp{value.at("tensor").get<std::string>(), value.at("at").get<std::string>(), value.at("distance").get<int64_t>()});
      break;
    case KnobKind::Batch:  // replaces the base's batch (auto's SDDMM has one), if any
      ops.erase(std::remove_if(ops.begin(), ops.end(), [](const ScheduleOp& op) { return std::holds_alternative<BatchOp>(op.op); }),
                ops.end());
      if (!value.is_null()) append(ops, BatchOp{value.at("var").get<std::string>(), value.at("factor").get<int64_t>()});
      break;
    case KnobKind::Format:  // the config's tensors change, not the schedule (formats_at)
    case KnobKind::Fuse:    // the config's "fuse" (fuse_at)
      break;
  }
}

// Adds choice `value` to `knob` when it differs from the choices there and compiles alone.
void offer(Knob& knob, const std::vector<ScheduleOp>& base, const json& value, const std::string& label,
           const std::function<bool(const std::vector<ScheduleOp>&)>& compiles) {
  if (std::find(knob.values.begin(), knob.values.end(), value) != knob.values.end()) return;
  std::vector<ScheduleOp> ops = base;
  apply(knob, value, ops);
  if (!compiles(ops)) return;
  knob.values.push_back(value);
  knob.labels.push_back(label);
}

}  // namespace

size_t SearchSpace::size() const {
  size_t n = 1;
  for (const Knob& k : knobs) {
    if (n > (size_t{1} << 62) / std::max<size_t>(1, k.values.size())) return size_t{1} << 62;
    n *= k.values.size();
  }
  return n;
}

SearchSpace build_search_space(const std::vector<ScheduleOp>& base, const Config& config,
                               const std::vector<std::string>& dense_inputs, const std::vector<std::string>& index_vars,
                               const std::function<bool(const std::vector<ScheduleOp>&)>& compiles) {
  SearchSpace space;
  space.base = base;
  const bool doubles = config.value_type == ValueType::Float64;
  // A decomposition's parts each have ops of their own ("part"), whose knobs say which part.
  const bool decomposed = !base.empty() && std::holds_alternative<DecomposeOp>(base.front().op);
  for (size_t i = 0; i < base.size(); ++i) {
    const ScheduleOp& op = base[i];
    if (!op.part.empty() && !decomposed) continue;  // the parts of a sum keep auto's choices
    const std::string in_part = op.part.empty() ? "" : " in " + op.part;
    if (const auto* p = std::get_if<ParallelOp>(&op.op); p && p->reduction.empty()) {
      Knob knob{KnobKind::Parallel, "parallel " + p->var + in_part, i, {parallel_value(*p)}, {parallel_label(parallel_value(*p))}};
      for (const json& v : parallel_choices()) offer(knob, base, v, parallel_label(v), compiles);
      if (knob.values.size() > 1) space.knobs.push_back(knob);
    } else if (const auto* t = std::get_if<TileOp>(&op.op)) {
      Knob knob{KnobKind::TileWidth, "tile " + t->var + in_part, i, {t->factor}, {std::to_string(t->factor)}};
      auto fixed = config.sizes.find(t->var);
      for (int64_t w : doubles ? std::vector<int64_t>{4, 8, 16, 32} : std::vector<int64_t>{8, 16, 32, 64})
        if (fixed == config.sizes.end() || w <= fixed->second) offer(knob, base, w, std::to_string(w), compiles);
      if (knob.values.size() > 1) space.knobs.push_back(knob);
    } else if (const auto* v = std::get_if<VectorizeOp>(&op.op); v && v->lanes > 0) {
      Knob knob{KnobKind::Lanes, "lanes " + v->var + in_part, i, {v->lanes}, {std::to_string(v->lanes)}};
      for (int64_t lanes : {4, 8, 16, 32}) offer(knob, base, lanes, std::to_string(lanes), compiles);
      if (knob.values.size() > 1) space.knobs.push_back(knob);
      // The rest of a row after its groups of lanes (all of a short row): one masked sum, which
      // no row's end branches out of, or one entry at a time; the base's first.
      const std::string tail = v->masked_tail ? "masked" : "scalar", other = v->masked_tail ? "scalar" : "masked";
      Knob tails{KnobKind::Tail, "tail " + v->var + in_part, i, {tail}, {tail}};
      offer(tails, base, other, other, compiles);
      if (tails.values.size() > 1) space.knobs.push_back(tails);
    }
  }
  // Prefetching a dense operand's rows, where a loop over a sparse level picks them; the base's
  // own prefetch (auto's, where it chose one) first, and none among the choices.
  if (config.target == Target::Cpu) {
    Knob knob{KnobKind::Prefetch, "prefetch", 0, {json()}, {"none"}};
    for (const ScheduleOp& op : base)
      if (const auto* given = std::get_if<PrefetchOp>(&op.op)) {
        knob.values = {json{{"tensor", given->tensor}, {"at", given->var}, {"distance", given->distance}}};
        knob.labels = {given->tensor + " at " + given->var + " +" + std::to_string(given->distance)};
        offer(knob, base, json(), "none", compiles);
        break;
      }
    for (const std::string& tensor : dense_inputs)
      for (const std::string& var : index_vars) {
        json probe = {{"tensor", tensor}, {"at", var}, {"distance", 8}};
        const bool given = std::find(knob.values.begin(), knob.values.end(), probe) != knob.values.end();
        const size_t before = knob.values.size();
        offer(knob, base, probe, tensor + " at " + var + " +8", compiles);
        if (!given && knob.values.size() == before) continue;
        for (int64_t d : {4, 16}) {
          json v = {{"tensor", tensor}, {"at", var}, {"distance", d}};
          offer(knob, base, v, tensor + " at " + var + " +" + std::to_string(d), compiles);
        }
      }
    if (knob.values.size() > 1) space.knobs.push_back(knob);
    // Batching the iterations of a loop whose body finishes a dot product in lanes (SDDMM's j);
    // the base's own batch (auto's, by the dot products' length: factor 0) first, and none among
    // the choices.
    Knob batch{KnobKind::Batch, "batch", 0, {json()}, {"none"}};
    for (const ScheduleOp& op : base)
      if (const auto* given = std::get_if<BatchOp>(&op.op)) {
        batch.values = {json{{"var", given->var}, {"factor", given->factor}}};
        batch.labels = {given->var + (given->factor > 0 ? " x" + std::to_string(given->factor) : " by length")};
        offer(batch, base, json(), "none", compiles);
        break;
      }
    for (const std::string& var : index_vars)
      for (int64_t factor : {2, 4, 8}) offer(batch, base, {{"var", var}, {"factor", factor}}, var + " x" + std::to_string(factor), compiles);
    if (batch.values.size() > 1) space.knobs.push_back(batch);
  }
  return space;
}

std::vector<ScheduleOp> schedule_at(const SearchSpace& space, const Point& point) {
  std::vector<ScheduleOp> ops = space.base;
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (point[k] != 0) apply(space.knobs[k], space.knobs[k].values[static_cast<size_t>(point[k])], ops);
  return ops;
}

std::string describe_point(const SearchSpace& space, const Point& point) {
  std::string text;
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (point[k] != 0) text += (text.empty() ? "" : " ") + space.knobs[k].name + "=" + space.knobs[k].labels[static_cast<size_t>(point[k])];
  return text.empty() ? "auto" : text;
}

json point_labels(const SearchSpace& space, const Point& point) {
  json labels = json::object();
  for (size_t k = 0; k < space.knobs.size(); ++k) labels[space.knobs[k].name] = space.knobs[k].labels[static_cast<size_t>(point[k])];
  return labels;
}

std::optional<Point> point_from_labels(const SearchSpace& space, const json& labels) {
  if (!labels.is_object() || labels.size() != space.knobs.size()) return std::nullopt;
  Point point;
  for (const Knob& knob : space.knobs) {
    if (!labels.contains(knob.name) || !labels[knob.name].is_string()) return std::nullopt;
    auto at = std::find(knob.labels.begin(), knob.labels.end(), labels[knob.name].get<std::string>());
    if (at == knob.labels.end()) return std::nullopt;
    point.push_back(static_cast<int>(at - knob.labels.begin()));
  }
  return point;
}

SearchSpace build_fuse_space(const std::function<bool(bool)>& differs_from_auto) {
  SearchSpace space;
  Knob knob{KnobKind::Fuse, "fuse", 0, {json()}, {"auto's"}};
  for (const bool fuse : {true, false})
    if (differs_from_auto(fuse)) {
      knob.values.push_back(fuse);
      knob.labels.push_back(fuse ? "fused" : "apart");
    }
  if (knob.values.size() > 1) space.knobs.push_back(knob);
  return space;
}

json fuse_at(const SearchSpace& space, const Point& point) {
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (space.knobs[k].kind == KnobKind::Fuse) return space.knobs[k].values[static_cast<size_t>(point[k])];
  return nullptr;
}

StatementSpaces join_statement_spaces(std::vector<SearchSpace> each) {
  StatementSpaces spaces;
  for (size_t k = 0; k < each.size(); ++k)
    for (Knob knob : each[k].knobs) {
      knob.name = "statement " + std::to_string(k + 1) + ": " + knob.name;
      spaces.joined.knobs.push_back(std::move(knob));
    }
  spaces.each = std::move(each);
  return spaces;
}

std::vector<Point> StatementSpaces::split(const Point& point) const {
  std::vector<Point> points;
  size_t at = 0;
  for (const SearchSpace& space : each) {
    points.emplace_back(point.begin() + static_cast<std::ptrdiff_t>(at), point.begin() + static_cast<std::ptrdiff_t>(at + space.knobs.size()));
    at += space.knobs.size();
  }
  return points;
}

}  // namespace spgen::tune
