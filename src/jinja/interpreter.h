// The interpreter behind Template::render (internal to src/jinja): scopes, macros and
// the evaluation of statements (renderer.cpp) and expressions (eval.cpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/builtins.h"
#include "jinja/renderer.h"

namespace myriad::jinja {

struct MacroObject;

// One scope: the template's root, a loop iteration, a macro call, a with block. Frames live
// on the C++ stack; macros defined in a frame stop being callable when it ends.
struct Frame {
    explicit Frame(Frame* p) : parent(p) {}
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    ~Frame();

    const Value* find_local(std::string_view name) const;
    void set(std::string_view name, Value v);

    Frame* parent;
    std::vector<std::pair<std::string, Value>> vars;
    std::vector<MacroObject*> macros;  // defined here (or callers created here)
};

class Interpreter;

// A macro, or the `caller` of a call block.
struct MacroObject : CallableObject {
    const Stmt* stmt = nullptr;
    Frame* closure = nullptr;  // where it was defined; null once that scope has ended
    std::string macro_name;
    std::string_view name() const override { return macro_name; }
    std::string repr() const override { return "<Macro '" + macro_name + "'>"; }
    Value call(Context& ctx, CallArgs& args) override;
};

class Interpreter final : public Context {
  public:
    explicit Interpreter(const RenderOptions& options);
    std::string render(const Body& body, const nlohmann::ordered_json& variables);

    Heap& heap() override { return heap_; }
    void check_size(size_t size) override;
    size_t max_output_bytes() const override { return opt_.limits.max_output_bytes; }
    void count_iterations(size_t n) override;
    Value call(const Value& callee, CallArgs& args) override;
    std::time_t now() override;

    Value call_macro(MacroObject& m, CallArgs& args);

  private:
    enum class Flow { Normal, Break, Continue };

    struct DepthGuard {
        explicit DepthGuard(Interpreter& in);
        ~DepthGuard() { --in.depth_; }
        Interpreter& in;
    };

    // Statements (renderer.cpp).
    Flow exec(const Body& body, Frame& frame);
    Flow exec_stmt(const Stmt& s, Frame& frame);
    void run_for(const Stmt& s, Frame& frame, const Value& iterable, int64_t depth0);
    void assign(const Target& t, const Value& v, Frame& frame);
    std::string capture(const Body& body, Frame& frame);
    void write(std::string_view text);
    MacroObject* make_macro(const Stmt& s, Frame& frame, std::string name);

    // Expressions (eval.cpp).
    Value eval(const Expr& e, Frame& frame);
    Value eval_inner(const Expr& e, Frame& frame);
    Value lookup(std::string_view name, Frame& frame);
    CallArgs eval_args(const Expr& e, Frame& frame);
    Value eval_call(const Expr& e, Frame& frame, const Value* caller);
    // A Filter node; a null innermost subject takes `block` (filter and set blocks).
    Value eval_filter(const Expr& e, Frame& frame, const Value* block);
    Value eval_compare(const Expr& e, Frame& frame);
    Value call_loop(LoopObject& loop, CallArgs& args);

    RenderOptions opt_;
    Heap heap_;
    std::string* out_ = nullptr;
    int64_t iterations_ = 0;
    int depth_ = 0;
    int macro_depth_ = 0;
};

// Fails at parse time, as jinja2 does, for filters and tests that do not exist.
void check_names(const Body& body);

}  // namespace myriad::jinja
