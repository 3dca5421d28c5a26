#pragma once
// A minimal streaming JSON writer (no external dependencies) for the command-line tools.
// Commas are inserted automatically; keys only inside objects.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace scalatrace::tools {

class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view k) {
    separate();
    write_string(k);
    std::fputc(':', out_);
    after_key_ = true;
  }
  void value(std::string_view s) {
    separate();
    write_string(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(std::int64_t v) {
    separate();
    std::fprintf(out_, "%lld", static_cast<long long>(v));
  }
  void value(std::uint64_t v) {
    separate();
    std::fprintf(out_, "%llu", static_cast<unsigned long long>(v));
  }
  void value(int v) { value(static_cast<std::int64_t>(v)); }
  void value(unsigned v) { value(static_cast<std::uint64_t>(v)); }
  void value(bool b) {
    separate();
    std::fputs(b ? "true" : "false", out_);
  }
  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  template <class T>
  void array(std::string_view k, const std::vector<T>& values) {
    key(k);
    begin_array();
    for (const auto& v : values) value(v);
    end_array();
  }
  void newline() { std::fputc('\n', out_); }

 private:
  void open(char c) {
    separate();
    std::fputc(c, out_);
    first_.push_back(true);
  }
  void close(char c) {
    std::fputc(c, out_);
    first_.pop_back();
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) std::fputc(',', out_);
      first_.back() = false;
    }
  }
  void write_string(std::string_view s) {
    std::fputc('"', out_);
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          std::fputs("\\\"", out_);
          break;
        case '\\':
          std::fputs("\\\\", out_);
          break;
        case '\n':
          std::fputs("\\n", out_);
          break;
        case '\r':
          std::fputs("\\r", out_);
          break;
        case '\t':
          std::fputs("\\t", out_);
          break;
        default:
          if (c < 0x20)
            std::fprintf(out_, "\\u%04x", c);
          else
            std::fputc(c, out_);
      }
    }
    std::fputc('"', out_);
  }

  std::FILE* out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace scalatrace::tools
