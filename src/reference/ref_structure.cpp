#include "ref_structure.h"

#include <set>
#include <stdexcept>
#include <vector>

namespace spgen_ref {

std::string restricted_to_entries(const std::string& spec_text, const std::string& pattern) {
    std::string text;
    bool comment = false;
    for (char c : spec_text) {
        if (c == '#') comment = true;
        if (c == '\n') comment = false;
        if (!comment) text += c == '\n' ? ' ' : c;
    }
    const size_t assign = text.find('=');
    if (assign == std::string::npos || assign == 0 || text[assign - 1] == '+')
        throw std::runtime_error("restricted_to_entries: expected `OUT(...) = ...`");
    auto trimmed = [](const std::string& s) {
        const size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
        return first == std::string::npos ? std::string() : s.substr(first, last + 1 - first);
    };
    const std::string lhs = trimmed(text.substr(0, assign));
    const size_t open = lhs.find('(');
    const std::string indices = open == std::string::npos ? "" : lhs.substr(open, lhs.rfind(')') + 1 - open);
    return lhs + " = " + pattern + indices + " * (" + trimmed(text.substr(assign + 1)) + ")";
}

std::string on_entries_of(const std::string& spec_text, const std::string& structure, std::map<std::string, Tensor>& inputs) {
    if (structure.empty()) return spec_text;
    inputs["spgen_structure"] = pattern_of(inputs.at(structure));
    return restricted_to_entries(spec_text, "spgen_structure");
}

Tensor pattern_of(const Tensor& tensor) {
    Tensor out;
    out.dims = tensor.dims;
    std::set<std::vector<int64_t>> seen;
    const size_t order = tensor.dims.size();
    for (size_t e = 0; e < tensor.nnz(); ++e) {
        std::vector<int64_t> at(tensor.coords.begin() + static_cast<std::ptrdiff_t>(e * order),
                                tensor.coords.begin() + static_cast<std::ptrdiff_t>((e + 1) * order));
        if (!seen.insert(at).second) continue;
        out.coords.insert(out.coords.end(), at.begin(), at.end());
        out.vals.push_back(1.0);
    }
    return out;
}

}  // namespace spgen_ref
