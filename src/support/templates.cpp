#include "support/templates.h"

#include <stdexcept>

namespace spgen::templates {

std::string render(std::string_view name, const std::map<std::string, std::string>& values) {
  std::optional<std::string_view> text = lookup(name);
  if (!text) throw std::logic_error("no embedded template named " + std::string(name));
  std::string out;
  out.reserve(text->size());
  size_t at = 0;
  while (at < text->size()) {
    size_t open = text->find("{{", at);
    if (open == std::string_view::npos) {
      out += text->substr(at);
      break;
    }
    size_t close = text->find("}}", open);
    if (close == std::string_view::npos) throw std::logic_error("unclosed {{ in template " + std::string(name));
    out += text->substr(at, open - at);
    std::string key(text->substr(open + 2, close - open - 2));
    auto value = values.find(key);
    if (value == values.end())
      throw std::logic_error("template " + std::string(name) + " needs a value for {{" + key + "}}");
    out += value->second;
    at = close + 2;
  }
  return out;
}

}  // namespace spgen::templates
