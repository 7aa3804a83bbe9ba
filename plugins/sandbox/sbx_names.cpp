#include "sbx_names.h"

namespace radial::sandbox {

namespace {

constexpr char kEscape = '.';
constexpr char kHex[] = "0123456789abcdef";

bool literal(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; // upper-case hex is not canonical: sandbox_name never writes it
}

} // namespace

std::string sandbox_name(std::string_view label) {
    std::string name;
    name.reserve(label.size());
    for (unsigned char c : label) {
        if (literal(c)) {
            name += static_cast<char>(c);
        } else {
            name += kEscape;
            name += kHex[c >> 4];
            name += kHex[c & 15];
        }
    }
    return name;
}

std::optional<std::string> label_of_sandbox(std::string_view name) {
    std::string label;
    label.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(name[i]);
        if (literal(c)) {
            label += static_cast<char>(c);
            continue;
        }
        if (c != kEscape || i + 2 >= name.size()) return std::nullopt;
        int hi = hex_value(name[i + 1]), lo = hex_value(name[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        auto byte = static_cast<unsigned char>(hi * 16 + lo);
        if (literal(byte)) return std::nullopt; // ".41" for 'A': not a name sandbox_name writes
        label += static_cast<char>(byte);
        i += 2;
    }
    return label;
}

} // namespace radial::sandbox
