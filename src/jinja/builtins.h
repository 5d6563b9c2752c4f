// What templates can call: jinja2's filters and tests, the methods of str, list and dict that
// chat templates use, operators with Python's semantics, attribute and item access with
// jinja2's fallbacks, and the globals of Hugging Face's environment (range, namespace, dict,
// raise_exception, strftime_now).
#pragma once

#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/parser.h"
#include "jinja/value.h"

namespace myriad::jinja {

// What builtins need from the running render.
class Context {
  public:
    virtual ~Context() = default;
    virtual Heap& heap() = 0;
    // Fails when a string or list of `size` bytes/items would pass the render's output limit.
    virtual void check_size(size_t size) = 0;
    virtual size_t max_output_bytes() const = 0;
    // Counts work done by loops inside builtins against the render's iteration limit.
    virtual void count_iterations(size_t n) = 0;
    // Calls any callable value: a macro, a builtin, a bound method.
    virtual Value call(const Value& callee, CallArgs& args) = 0;
    virtual std::time_t now() = 0;
};

// Python-style binding of call arguments to parameter names; absent ones are undefined.
class Args {
  public:
    Args(const CallArgs& args, std::string_view function,
         std::initializer_list<std::string_view> names);
    const Value& operator[](size_t i) const { return values_[i]; }
    bool given(size_t i) const { return !values_[i].is_undefined(); }
    // Typed accessors: a wrong type fails naming the function and the parameter.
    std::optional<std::string> opt_string(size_t i) const;
    int64_t integer(size_t i, int64_t fallback) const;
    bool boolean(size_t i, bool fallback) const;

  private:
    std::string function_;
    std::vector<std::string_view> names_;
    std::vector<Value> values_;
};

using FilterFn = Value (*)(Context& ctx, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Context& ctx, const Value& subject, CallArgs& args);

// nullptr when there is no such filter / test.
FilterFn find_filter(std::string_view name);
FilterFn find_number_filter(std::string_view name);  // int, float, abs, round
TestFn find_test(std::string_view name);
// A global function (range, namespace, dict, raise_exception, strftime_now, ...), or
// undefined.
Value find_global(std::string_view name);

// obj.name: attribute first (str/list/dict methods, namespace and loop fields), then item.
Value get_attr(Context& ctx, const Value& obj, const std::string& name);
// obj[key]: item first, then (for string keys) attribute.
Value get_item(Context& ctx, const Value& obj, const Value& key);
// obj[start:stop:step] for str, list and tuple; absent bounds are undefined values.
Value get_slice(Context& ctx, const Value& obj, const Value& start, const Value& stop,
                const Value& step);
// A method call obj.name(args) on str, list, tuple or dict; nullopt when `name` is not a
// method of that type (the caller then falls back to get_attr).
std::optional<Value> call_method(Context& ctx, const Value& obj, const std::string& name,
                                 CallArgs& args);

// Python's binary operators +, -, *, /, //, %, ** (Op::Add ... Op::Pow).
Value binary_op(Context& ctx, Op op, const Value& a, const Value& b);
Value unary_op(Op op, const Value& a);
// Python's `item in container`.
bool contains(const Value& container, const Value& item);
// The items `for` visits: list and tuple items, dict keys, the characters of a string;
// nothing for undefined. Other values fail ("'int' object is not iterable").
std::vector<Value> iterate(const Value& v);
size_t length(const Value& v);  // Python's len(); fails for values without one

// Python's `fmt % args` for strings, and str.format.
std::string percent_format(Context& ctx, const std::string& fmt, const Value& args);
std::string str_format(Context& ctx, const std::string& fmt, const CallArgs& args);

}  // namespace myriad::jinja
