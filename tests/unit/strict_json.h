// SPDX-License-Identifier: Apache-2.0
// A strict JSON parser for the tests that read back what the library writes (the timeline's
// Chrome trace), written independently of the library's writer: anything that is not JSON
// by RFC 8259 is rejected (JsonParser::parse returns false).
#pragma once

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace strict_json {

struct Json {
    enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
    Kind kind = kNull;
    bool boolean = false;
    double number = 0;
    std::string str;
    std::vector<Json> items;        // array elements, or object values
    std::vector<std::string> keys;  // object keys, parallel to items

    const Json *get(const std::string &key) const {
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == key) return &items[i];
        return nullptr;
    }
};

inline void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | cp >> 6);
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | cp >> 12);
        out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | cp >> 18);
        out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
        out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// RFC 8259 grammar, rejecting anything it does not allow (trailing commas, raw control
// characters, leading zeros, trailing garbage, malformed UTF-8).
class JsonParser {
  public:
    explicit JsonParser(const std::string &text) : s_(text) {}

    bool parse(Json &out) {
        skip_ws();
        if (!value(out, 0)) return false;
        skip_ws();
        return pos_ == s_.size();
    }

  private:
    static constexpr int kMaxDepth = 64;

    bool value(Json &out, int depth) {
        if (depth > kMaxDepth || pos_ >= s_.size()) return false;
        const char c = s_[pos_];
        if (c == '{') return object(out, depth);
        if (c == '[') return array(out, depth);
        if (c == '"') {
            out.kind = Json::kString;
            return string(out.str);
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            out.kind = Json::kNumber;
            return number(out);
        }
        if (literal("null")) return true;
        out.kind = Json::kBool;
        out.boolean = literal("true");
        return out.boolean || literal("false");
    }

    bool object(Json &out, int depth) {
        out.kind = Json::kObject;
        ++pos_;
        skip_ws();
        if (eat('}')) return true;
        do {
            skip_ws();
            out.keys.emplace_back();
            if (peek() != '"' || !string(out.keys.back())) return false;
            skip_ws();
            if (!eat(':')) return false;
            skip_ws();
            out.items.emplace_back();
            if (!value(out.items.back(), depth + 1)) return false;
            skip_ws();
        } while (eat(','));
        return eat('}');
    }

    bool array(Json &out, int depth) {
        out.kind = Json::kArray;
        ++pos_;
        skip_ws();
        if (eat(']')) return true;
        do {
            skip_ws();
            out.items.emplace_back();
            if (!value(out.items.back(), depth + 1)) return false;
            skip_ws();
        } while (eat(','));
        return eat(']');
    }

    bool string(std::string &out) {
        ++pos_;  // the opening quote
        while (pos_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') return ++pos_, true;
            if (c < 0x20) return false;
            if (c == '\\') {
                if (!escape(out)) return false;
            } else if (c < 0x80) {
                out += static_cast<char>(c);
                ++pos_;
            } else if (!raw_utf8(out)) {
                return false;
            }
        }
        return false;
    }

    bool escape(std::string &out) {
        if (++pos_ >= s_.size()) return false;
        const char c = s_[pos_++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        if (const char *hit = std::strchr(from, c); hit != nullptr && c != '\0')
            return out += to[hit - from], true;
        if (c != 'u') return false;
        uint32_t cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
            uint32_t low = 0;
            if (!literal("\\u") || !hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
        }
        append_utf8(out, cp);
        return true;
    }

    bool hex4(uint32_t &cp) {
        if (pos_ + 4 > s_.size()) return false;
        for (int i = 0; i < 4; ++i) {
            const char h = s_[pos_++];
            int v = -1;
            if (h >= '0' && h <= '9') v = h - '0';
            if (h >= 'a' && h <= 'f') v = h - 'a' + 10;
            if (h >= 'A' && h <= 'F') v = h - 'A' + 10;
            if (v < 0) return false;
            cp = cp << 4 | static_cast<uint32_t>(v);
        }
        return true;
    }

    // Decodes one multi-byte character and checks it is the shortest form of a scalar value.
    bool raw_utf8(std::string &out) {
        const auto lead = static_cast<unsigned char>(s_[pos_]);
        const int extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : -1;
        if (extra < 0 || lead > 0xF4 || pos_ + extra >= s_.size()) return false;
        uint32_t cp = lead & (0x3F >> extra);
        for (int i = 1; i <= extra; ++i) {
            const auto b = static_cast<unsigned char>(s_[pos_ + i]);
            if ((b & 0xC0) != 0x80) return false;
            cp = cp << 6 | (b & 0x3F);
        }
        const uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        out.append(s_, pos_, extra + 1);
        pos_ += extra + 1;
        return true;
    }

    bool number(Json &out) {
        const size_t start = pos_;
        eat('-');
        if (eat('0')) {
            if (digits() > 0) return false;  // no leading zeros
        } else if (digits() == 0) {
            return false;
        }
        if (eat('.') && digits() == 0) return false;
        if (eat('e') || eat('E')) {
            if (!eat('+')) eat('-');
            if (digits() == 0) return false;
        }
        out.number = std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
        return true;
    }

    size_t digits() {
        size_t n = 0;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9')
            ++pos_, ++n;
        return n;
    }

    void skip_ws() {
        while (pos_ < s_.size() && std::strchr(" \t\n\r", s_[pos_]) != nullptr && s_[pos_] != 0)
            ++pos_;
    }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    bool eat(char c) { return peek() == c ? (++pos_, true) : false; }
    bool literal(const char *lit) {
        const size_t n = std::strlen(lit);
        if (s_.compare(pos_, n, lit) != 0) return false;
        pos_ += n;
        return true;
    }

    const std::string s_;
    size_t pos_ = 0;
};

}  // namespace strict_json
