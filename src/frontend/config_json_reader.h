#pragma once

// The JSON helpers the config's readers share: typed getters and key checks whose errors name
// the value's JSON path, turned into file:line:col by format_config_error.

#include "frontend/ast.h"
#include "support/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace spgen {

class ConfigJsonReader {
 public:
  ConfigJsonReader(const std::string& file, const std::string& text, const ast::Spec& spec)
      : file_(file), text_(text), spec_(spec) {}

 protected:
  using json = nlohmann::json;

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw CompileError(format_config_error(file_, path, message));
  }

  static std::string type_name(const json& value) { return value.type_name(); }

  void expect_object(const json& value, const std::string& path) const {
    if (!value.is_object()) fail(path, "expected an object, found " + type_name(value));
  }

  std::string get_string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string, found " + type_name(value));
    return value.get<std::string>();
  }

  int64_t get_positive_int(const json& value, const std::string& path) const {
    if (!value.is_number_integer()) fail(path, "expected an integer, found " + type_name(value));
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(path, "integer " + value.dump() + " is too large");
    int64_t number = value.get<int64_t>();
    if (number <= 0) fail(path, "expected a positive integer, found " + std::to_string(number));
    return number;
  }

  void check_keys(const json& object, const std::string& path, std::initializer_list<const char*> allowed) const {
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool known = std::any_of(allowed.begin(), allowed.end(), [&](const char* key) { return it.key() == key; });
      if (!known) {
        std::string list;
        for (const char* key : allowed) list += (list.empty() ? "" : ", ") + std::string(key);
        fail(path + "/" + it.key(), "unknown key \"" + it.key() + "\" (expected one of: " + list + ")");
      }
    }
  }

  static bool is_c_identifier(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  }

  bool is_index_var(const std::string& var) const {
    return std::find(spec_.index_vars.begin(), spec_.index_vars.end(), var) != spec_.index_vars.end();
  }

  std::string unknown_index_var(const std::string& var) const {
    std::string known;
    for (const std::string& v : spec_.index_vars) known += (known.empty() ? "" : ", ") + v;
    return "no index variable " + var + " in the spec (its index variables are: " + known + ")";
  }

  const std::string& file_;
  const std::string& text_;
  const ast::Spec& spec_;
};

}  // namespace spgen
