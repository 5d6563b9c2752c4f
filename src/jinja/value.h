// Values of the Jinja interpreter, with Python's semantics: none, bool, int, float, str, list,
// tuple, dict (insertion order kept), namespace, callables (macros, builtins, bound methods),
// the `loop` object, and jinja2's Undefined. Containers live in a Heap owned by one render
// and are referenced by plain pointers: cycles (a list appended to itself) cannot leak, and
// freeing never recurses.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/error.h"

namespace myriad::jinja {

// Where a token or node starts in the template (1-based; column counts code points).
struct Pos {
    int line = 0;
    int column = 0;
};

// A syntax or rendering error at a place in the template; bad input (exit status 2).
// what() is "line L, column C: message".
class TemplateError : public Error {
  public:
    TemplateError(Pos pos, const std::string& message)
        : Error(ErrorKind::BadInput,
                fmt::format("line {}, column {}: {}", pos.line, pos.column, message)),
          pos_(pos),
          message_(message) {}
    Pos pos() const { return pos_; }
    const std::string& message() const { return message_; }

  private:
    Pos pos_;
    std::string message_;
};

// A failure while evaluating, before the renderer adds the template position to it.
class RenderFailure : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
    throw RenderFailure(fmt::format(f, std::forward<Args>(args)...));
}

struct Object {
    virtual ~Object() = default;
};
struct ListObject;
struct DictObject;
struct NamespaceObject;
struct CallableObject;
struct LoopObject;
struct Stmt;
struct Frame;

class Value {
  public:
    enum class Kind : uint8_t {
        Undefined,
        None,
        Bool,
        Int,
        Float,
        String,
        List,
        Tuple,
        Dict,
        Namespace,
        Callable,
        Loop,
    };

    Value() = default;  // undefined
    // Undefined that raises `hint` (e.g. "'x' is undefined") when used in a way that must fail.
    static Value undefined(std::string hint);
    static Value none() { return Value(Kind::None); }
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double f);
    static Value string(std::string s);
    static Value string(std::shared_ptr<const std::string> s);
    static Value list(ListObject* l);
    static Value tuple(ListObject* l);
    static Value dict(DictObject* d);
    static Value ns(NamespaceObject* n);
    static Value callable(CallableObject* c);
    static Value loop(LoopObject* l);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    // int, float or bool (Python's numbers.Number includes bool).
    bool is_number() const {
        return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool;
    }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_tuple() const { return kind_ == Kind::Tuple; }
    bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_callable() const { return kind_ == Kind::Callable; }
    bool is_loop() const { return kind_ == Kind::Loop; }

    bool as_bool() const { return u_.b; }
    int64_t as_int() const { return kind_ == Kind::Bool ? (u_.b ? 1 : 0) : u_.i; }
    double as_float() const { return kind_ == Kind::Float ? u_.f : static_cast<double>(as_int()); }
    const std::string& str() const { return *s_; }
    const std::shared_ptr<const std::string>& shared_str() const { return s_; }
    ListObject& list() const;
    DictObject& dict() const;
    NamespaceObject& ns() const;
    CallableObject& callable() const;
    LoopObject& loop() const;
    const Object* object() const { return u_.obj; }
    // The message an undefined value raises; empty for a plain undefined.
    std::string undefined_hint() const { return s_ ? *s_ : std::string(); }

  private:
    explicit Value(Kind k) : kind_(k) {}
    Value(Kind k, Object* o) : kind_(k) { u_.obj = o; }

    Kind kind_ = Kind::Undefined;
    union {
        bool b;
        int64_t i;
        double f;
        Object* obj;
    } u_{};
    std::shared_ptr<const std::string> s_;  // string contents, or an undefined's hint
};

struct ListObject : Object {
    std::vector<Value> items;
    // A list standing for another Python type: dict.keys() and the like (print as
    // dict_keys([...]), not subscriptable), range(5) (prints as range(0, 5)), and the
    // generators of jinja2's lazy filters (select, map, ...: always true, no len(), not
    // subscriptable, single pass; an error while producing them is raised when consumed).
    enum class View : uint8_t {
        None,
        DictKeys,
        DictValues,
        DictItems,
        Range,
        Generator
    } view = View::None;
    int64_t range[3] = {0, 0, 1};  // start, stop, step of a Range
    const char* generator_type = "generator";
    std::string pending_error;  // a Generator's deferred failure
};

// A Python dict: keys are compared as Python does (1 == 1.0 == True); insertion order kept.
struct DictObject : Object {
    std::vector<std::pair<Value, Value>> entries;

    const Value* find(const Value& key) const;
    Value* find(const Value& key) { return const_cast<Value*>(std::as_const(*this).find(key)); }
    const Value* find(std::string_view key) const;
    // Inserts or replaces (an existing key keeps its place). Unhashable keys fail.
    void set(const Value& key, Value value);
    bool erase(const Value& key, Value* removed);
    void clear() {
        entries.clear();
        index_.clear();
        indexed_ = 0;
    }
    size_t size() const { return entries.size(); }

  private:
    void rebuild_index() const;
    // Position of string keys, built once the dict is large; rebuilt after an erase.
    mutable std::unordered_map<std::string_view, size_t> index_;
    mutable size_t indexed_ = 0;
};

struct NamespaceObject : Object {
    DictObject attrs;
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

class Context;

struct CallableObject : Object {
    virtual std::string_view name() const = 0;
    // How Python prints the object, e.g. "<Macro 'render'>".
    virtual std::string repr() const = 0;
    virtual Value call(Context& ctx, CallArgs& args) = 0;
};

// The `loop` variable of one for statement.
struct LoopObject : Object {
    ListObject* items = nullptr;  // what is iterated (read live: appends extend the loop)
    int64_t index0 = 0;
    int64_t cached_length = -1;  // fixed the first time a length-based field is read
    int64_t depth0 = 0;
    Value last_changed;  // loop.changed() state
    bool has_changed = false;
    const Stmt* stmt = nullptr;  // the for statement, for recursive loops
    Frame* frame = nullptr;      // its frame while the loop runs; null after
    int64_t length();
};

inline Value Value::list(ListObject* l) {
    return Value(Kind::List, l);
}
inline Value Value::tuple(ListObject* l) {
    return Value(Kind::Tuple, l);
}
inline Value Value::dict(DictObject* d) {
    return Value(Kind::Dict, d);
}
inline Value Value::ns(NamespaceObject* n) {
    return Value(Kind::Namespace, n);
}
inline Value Value::callable(CallableObject* c) {
    return Value(Kind::Callable, c);
}
inline Value Value::loop(LoopObject* l) {
    return Value(Kind::Loop, l);
}
inline ListObject& Value::list() const {
    return *static_cast<ListObject*>(u_.obj);
}
inline DictObject& Value::dict() const {
    return *static_cast<DictObject*>(u_.obj);
}
inline NamespaceObject& Value::ns() const {
    return *static_cast<NamespaceObject*>(u_.obj);
}
inline CallableObject& Value::callable() const {
    return *static_cast<CallableObject*>(u_.obj);
}
inline LoopObject& Value::loop() const {
    return *static_cast<LoopObject*>(u_.obj);
}

// Owns every container and callable of one render.
class Heap {
  public:
    explicit Heap(size_t max_objects = 4'000'000) : max_objects_(max_objects) {}
    Heap(const Heap&) = delete;
    Heap& operator=(const Heap&) = delete;

    template <typename T, typename... Args>
    T* make(Args&&... args) {
        if (objects_.size() >= max_objects_)
            fail("the template created more than {} lists, dicts and objects", max_objects_);
        auto p = std::make_unique<T>(std::forward<Args>(args)...);
        T* raw = p.get();
        objects_.push_back(std::move(p));
        return raw;
    }
    ListObject* list() { return make<ListObject>(); }
    DictObject* dict() { return make<DictObject>(); }
    Value new_list(std::vector<Value> items = {});
    Value new_tuple(std::vector<Value> items);

  private:
    size_t max_objects_;
    std::vector<std::unique_ptr<Object>> objects_;
};

// Python's truth value.
bool truthy(const Value& v);
// A list that is one of jinja2's lazy generators.
bool is_generator(const Value& v);
// Python's str(v) (undefined prints as ""), appended to `out`.
void append_str(std::string& out, const Value& v);
std::string to_str(const Value& v);
// Python's repr(v) as jinja2 shows containers: ['a', 1, None], {'k': (1,)}.
std::string repr(const Value& v);
// Python's ==.
bool equals(const Value& a, const Value& b);
// Python's <; fails for types that do not order ("'<' not supported between ...").
bool less(const Value& a, const Value& b);
// Python's type name: 'int', 'str', 'list', 'dict', 'NoneType', ...
std::string_view type_name(const Value& v);
// How jinja2 names an object in "'dict object' has no attribute 'x'".
std::string object_description(const Value& v);
// repr() of a float as Python prints it: 1.0, 0.1, 1e-05, 1e+16, inf, nan.
std::string float_repr(double d);
// Throws the undefined value's error ("'x' is undefined").
[[noreturn]] void raise_undefined(const Value& v);

// Deep operations stop with an error past this nesting (a list holding itself, say).
constexpr int kMaxNesting = 200;

}  // namespace myriad::jinja
