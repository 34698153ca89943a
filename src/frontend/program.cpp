#include "frontend/program.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support/diagnostics.h"

namespace spgen {

namespace {

using json = nlohmann::json;

std::string at_line(SourceLoc loc) { return "line " + std::to_string(loc.line) + ", column " + std::to_string(loc.col); }

class ProgramChecker {
 public:
  explicit ProgramChecker(const ast::Program& program) : program_(program) {}

  ProgramTensors run() {
    const bool several = program_.statements.size() > 1;
    for (size_t k = 0; k < program_.statements.size(); ++k) {
      const ast::Spec& statement = program_.statements[k];
      // `+=` adds into what an earlier statement wrote with `=`, not into the caller's array.
      if (several && statement.accumulate && !out_.writer.count(statement.output.tensor))
        fail(statement.output.loc, "`+=` into " + statement.output.tensor + ", which no earlier statement writes" +
                                       (program_.lifted.empty() ? "" : " (a reduction inside an expression is a statement of its own)") +
                                       ": in a spec of several statements, `+=` adds into what an earlier statement wrote with `=`");
      for (const ast::Access* access : ast::collect_accesses(*statement.rhs)) read(*access, k);
      write(statement.output, k, several && statement.accumulate);
    }
    for (const ast::Spec& statement : program_.statements)
      for (const std::string& var : statement.index_vars) {
        if (const ast::TensorUse* tensor = find(var))
          fail(tensor->first_loc, "'" + var + "' is used both as a tensor and as an index variable");
        const std::string& first = root(var);
        if (std::find(out_.index_vars.begin(), out_.index_vars.end(), first) == out_.index_vars.end()) out_.index_vars.push_back(first);
      }
    for (const ast::Spec& statement : program_.statements)
      for (const std::string& var : statement.index_vars) out_.index_class[var] = root(var);
    return out_;
  }

 private:
  [[noreturn]] void fail(SourceLoc loc, const std::string& message) const {
    throw CompileError(format_source_error(program_.file, program_.text, loc, message));
  }

  const ast::TensorUse* find(const std::string& name) const {
    for (const ast::TensorUse& t : out_.tensors)
      if (t.name == name) return &t;
    return nullptr;
  }

  // The tensor's use, recorded or checked against its first: the same order, and index
  // variables unified mode by mode.
  void use(const ast::Access& access, bool written) {
    auto first = modes_.find(access.tensor);
    if (first == modes_.end()) {
      out_.tensors.push_back({access.tensor, static_cast<int>(access.indices.size()), written, access.loc});
      modes_[access.tensor] = access.indices;
      for (const std::string& var : access.indices) root(var);
      return;
    }
    const ast::TensorUse& seen = *find(access.tensor);
    if (first->second.size() != access.indices.size())
      fail(access.loc, "tensor " + access.tensor + " is used with " + std::to_string(access.indices.size()) + " indices here but with " +
                           std::to_string(seen.order) + " at " + at_line(seen.first_loc));
    for (size_t m = 0; m < access.indices.size(); ++m) unite(first->second[m], access.indices[m]);
  }

  void read(const ast::Access& access, size_t k) {
    use(access, false);
    std::vector<size_t>& readers = out_.readers[access.tensor];
    if (readers.empty() || readers.back() != k) readers.push_back(k);
  }

  // `adds`: a later statement's `+=` into what an earlier one wrote (its writer stays that one).
  void write(const ast::Access& output, size_t k, bool adds) {
    if (adds) {
      use(output, true);
      return;
    }
    if (auto earlier = out_.writer.find(output.tensor); earlier != out_.writer.end())
      fail(output.loc, output.tensor + " is already written by the statement at " +
                           at_line(program_.statements[earlier->second].output.loc) +
                           ": a tensor is written once with `=` (a later statement may add into it with `+=`)");
    if (auto readers = out_.readers.find(output.tensor); readers != out_.readers.end())
      for (const ast::Access* access : ast::collect_accesses(*program_.statements[readers->second.front()].rhs))
        if (access->tensor == output.tensor)
          fail(access->loc, output.tensor + " is read here before the statement that writes it (at " + at_line(output.loc) +
                                "): a statement reads only what earlier statements wrote");
    use(output, true);  // (its first use: a tensor read or written before is an error above)
    out_.writer[output.tensor] = k;
  }

  // Union-find over index variables, each class named by its first variable.
  const std::string& root(const std::string& var) {
    auto it = parent_.find(var);
    if (it == parent_.end()) return parent_.emplace(var, var).first->second;
    if (it->second == var) return it->second;
    const std::string up = root(it->second);
    it->second = up;
    return it->second;
  }
  void unite(const std::string& a, const std::string& b) {
    const std::string ra = root(a), rb = root(b);
    if (ra == rb) return;
    // The class keeps the variable that appeared first.
    const size_t a_at = order_of(ra), b_at = order_of(rb);
    if (a_at <= b_at) parent_[rb] = ra;
    else parent_[ra] = rb;
  }
  size_t order_of(const std::string& var) const {
    size_t at = 0;
    for (const ast::Spec& statement : program_.statements)
      for (const std::string& v : statement.index_vars) {
        if (v == var) return at;
        ++at;
      }
    return at;
  }

  const ast::Program& program_;
  ProgramTensors out_;
  std::map<std::string, std::vector<std::string>> modes_;  // a tensor's index variables where first used
  std::map<std::string, std::string> parent_;
};

[[noreturn]] void fail_config(const std::string& file, const std::string& path, const std::string& message) {
  throw CompileError(format_config_error(file, path, message));
}

// A config key that names an index variable ("sizes", "specialize"): one of the spec's.
void check_index_variable(const std::string& file, const std::string& path, const std::string& var, const ProgramTensors& tensors) {
  if (tensors.index_class.count(var)) return;
  std::string known;
  for (const auto& [name, _] : tensors.index_class) known += (known.empty() ? "" : ", ") + name;
  fail_config(file, path, "no index variable " + var + " in the spec (its index variables are: " + known + ")");
}

}  // namespace

ProgramTensors check_program(const ast::Program& program) { return ProgramChecker(program).run(); }

std::string statement_kernel_name(const std::string& name, size_t k) { return name + "_s" + std::to_string(k + 1); }

ProgramConfig read_program_config(const std::string& file, const std::string& text, const ast::Program& program,
                                  const ProgramTensors& tensors, const std::string& default_name,
                                  const std::map<std::string, int64_t>& sizes) {
  ProgramConfig out;
  const size_t statements = program.statements.size();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception&) {
    // read_config reports the error where it lies (line and column).
    read_config(file, text, program.statements.front(), default_name);
    throw;
  }
  if (!root.is_object()) fail_config(file, "/", std::string("expected an object, found ") + root.type_name());
  if (statements > 1 && root.contains("name") && !root["name"].is_string())
    fail_config(file, "/name", std::string("expected a string, found ") + root["name"].type_name());
  out.name = root.contains("name") && root["name"].is_string() ? root["name"].get<std::string>() : default_name;

  auto writer = [&](const std::string& tensor) -> std::optional<size_t> {
    auto it = tensors.writer.find(tensor);
    return it == tensors.writer.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  if (root.contains("tensors") && root["tensors"].is_object()) {
    for (auto it = root["tensors"].begin(); it != root["tensors"].end(); ++it) {
      const std::string path = "/tensors/" + it.key();
      if (std::none_of(tensors.tensors.begin(), tensors.tensors.end(), [&](const ast::TensorUse& t) { return t.name == it.key(); })) {
        std::string known;
        for (const ast::TensorUse& t : tensors.tensors) known += (known.empty() ? "" : ", ") + t.name;
        fail_config(file, path, "tensor " + it.key() + " does not appear in the spec (its tensors are: " + known + ")");
      }
      if (!it.value().is_object() || !it.value().contains("temporary")) continue;
      const json& flag = it.value()["temporary"];
      if (!flag.is_boolean()) fail_config(file, path + "/temporary", std::string("expected true or false, found ") + flag.type_name());
      if (!flag.get<bool>()) continue;
      const std::optional<size_t> k = writer(it.key());
      if (!k) fail_config(file, path + "/temporary", it.key() + " is an input: only a tensor that a statement writes can be temporary");
      const std::vector<size_t>& readers = tensors.readers.count(it.key()) ? tensors.readers.at(it.key()) : std::vector<size_t>{};
      if (std::none_of(readers.begin(), readers.end(), [&](size_t r) { return r > *k; }))
        fail_config(file, path + "/temporary", "no statement reads the temporary " + it.key() +
                                                   ": the kernel would compute it for nothing (make it an output, or drop its statement)");
      out.temporaries.insert(it.key());
    }
  }
  out.temporaries.insert(program.lifted.begin(), program.lifted.end());
  if (root.contains("fuse")) {
    if (statements == 1) fail_config(file, "/fuse", "\"fuse\" belongs to a spec of several statements");
    if (!root["fuse"].is_boolean()) fail_config(file, "/fuse", std::string("expected true or false, found ") + root["fuse"].type_name());
    out.fuse = root["fuse"].get<bool>();
    out.fuse_given = true;
  }
  if (statements > 1) {
    const char* for_now = " in a spec of several statements is not supported yet";
    if (root.contains("schedule") && root["schedule"].is_array())
      fail_config(file, "/schedule", "a spec of several statements takes a schedule per statement: {\"1\": [ops], \"2\": \"auto\"}, or "
                                     "\"auto\" for every statement");
    if (root.contains("schedule") && root["schedule"].is_object())
      for (auto it = root["schedule"].begin(); it != root["schedule"].end(); ++it) {
        const std::string& key = it.key();
        const bool number = !key.empty() && key.size() < 4 && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        if (!number || std::stoul(key) < 1 || std::stoul(key) > statements)
          fail_config(file, "/schedule/" + key, "expected a statement's number, 1 to " + std::to_string(statements));
      }
    if (root.contains("factor"))
      fail_config(file, "/factor", "\"factor\" rewrites a spec of one statement; this one has several already");
    // "specialize": {"k": [...]} gives kernels per size to the statements with a variable of k's class.
    if (root.contains("specialize") && root["specialize"].is_object()) {
      if (out.fuse)
        fail_config(file, "/specialize", "\"specialize\" compiles a statement's loops again per size, which fused statements share: "
                                         "drop \"fuse\" or \"specialize\"");
      for (auto it = root["specialize"].begin(); it != root["specialize"].end(); ++it)
        check_index_variable(file, "/specialize/" + it.key(), it.key(), tensors);
    }
    if (root.contains("variants")) fail_config(file, "/variants", std::string("\"variants\"") + for_now);
  }

  // Sizes are per class of index variables: each statement gets its variables' classes' sizes.
  std::map<std::string, std::pair<int64_t, std::string>> class_size;  // class -> size, the variable that gave it
  auto size_of_class = [&](const std::string& var, int64_t size, const std::string& where) {
    auto known = tensors.index_class.find(var);
    if (known == tensors.index_class.end()) return;  // (read_config reports it)
    auto [it, fresh] = class_size.emplace(known->second, std::make_pair(size, var));
    if (!fresh && it->second.first != size)
      fail_config(file, where, var + " and " + it->second.second + " index the same mode of a tensor, so they have one size, but " +
                                   std::to_string(size) + " and " + std::to_string(it->second.first) + " are given");
  };
  if (statements > 1 && root.contains("sizes") && root["sizes"].is_object())
    for (auto it = root["sizes"].begin(); it != root["sizes"].end(); ++it) {
      check_index_variable(file, "/sizes/" + it.key(), it.key(), tensors);
      if (!it.value().is_number_integer() || it.value().get<int64_t>() <= 0)
        fail_config(file, "/sizes/" + it.key(), "expected a positive integer, found " + it.value().dump());
      size_of_class(it.key(), it.value().get<int64_t>(), "/sizes/" + it.key());
    }
  if (statements > 1)
    for (const auto& [var, size] : sizes) {
      if (!tensors.index_class.count(var))
        throw CompileError("spgen: error: --size " + var + "=" + std::to_string(size) + ": no index variable " + var + " in the spec\n");
      size_of_class(var, size, "--size");
    }

  for (size_t k = 0; k < statements; ++k) {
    const ast::Spec& statement = program.statements[k];
    json mine = root;
    mine["name"] = statements > 1 ? statement_kernel_name(out.name, k) : out.name;
    mine.erase("fuse");
    std::string schedule_path = "/schedule";
    if (statements > 1 && root.contains("schedule") && root["schedule"].is_object()) {
      const std::string number = std::to_string(k + 1);
      if (root["schedule"].contains(number)) {
        mine["schedule"] = root["schedule"][number];
        schedule_path += "/" + number;
      } else {
        mine.erase("schedule");
      }
    }
    out.schedule_paths.push_back(schedule_path);
    if (mine.contains("tensors") && mine["tensors"].is_object()) {
      json kept = json::object();
      for (auto it = mine["tensors"].begin(); it != mine["tensors"].end(); ++it) {
        if (!statement.find_tensor(it.key())) continue;
        json entry = it.value();
        if (entry.is_object()) entry.erase("temporary");
        kept[it.key()] = entry;
      }
      mine["tensors"] = kept;
    }
    if (statements > 1 && mine.contains("specialize") && mine["specialize"].is_object()) {
      json kept = json::object();
      for (auto it = root["specialize"].begin(); it != root["specialize"].end(); ++it)
        for (const std::string& var : statement.index_vars)
          if (tensors.index_class.at(var) == tensors.index_class.at(it.key()) && !kept.contains(var)) kept[var] = it.value();
      if (kept.empty()) mine.erase("specialize");  // (`auto` chooses this statement's variants)
      else mine["specialize"] = kept;
    }
    std::map<std::string, int64_t> statement_sizes;
    if (statements > 1) {
      json kept = json::object();
      for (const std::string& var : statement.index_vars)
        if (auto size = class_size.find(tensors.index_class.at(var)); size != class_size.end()) kept[var] = size->second.first;
      if (mine.contains("sizes")) mine["sizes"] = kept;
      for (const auto& [var, size] : sizes)
        for (const std::string& v : statement.index_vars)
          if (tensors.index_class.at(v) == tensors.index_class.at(var)) statement_sizes[v] = size;
    } else {
      statement_sizes = sizes;
    }
    out.statement_json.push_back(statements > 1 ? mine.dump() : text);
    out.statement_sizes.push_back(std::move(statement_sizes));
  }
  return out;
}

}  // namespace spgen
