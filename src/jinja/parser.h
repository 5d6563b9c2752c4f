// Jinja parser: tokens -> syntax tree, with jinja2's grammar and operator precedence
// (filters and tests bind tighter than arithmetic; `**` is left-associative; comparisons
// chain). Statements: if/elif/else, for (targets, `if` filter, else, recursive), set (also
// `ns.attr` and block set), macro, call, filter, with, break/continue, raw, generation.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace myriad::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
    Literal,   // literal
    Name,      // name
    List,      // args
    Tuple,     // args
    Dict,      // args: key, value, key, value, ...
    Getattr,   // a.name
    Getitem,   // a[b]
    Slice,     // a:b:c inside [], each may be null
    Call,      // a(args, kwargs, *dyn_args, **dyn_kwargs)
    Filter,    // a|name(args...); a is null in filter blocks
    Test,      // a is [not] name(args...)
    Unary,     // op a
    Binary,    // a op b (arithmetic, `and`, `or`)
    Concat,    // args[0] ~ args[1] ~ ...
    Compare,   // a ops[0] args[0] ops[1] args[1] ...
    CondExpr,  // a if b else c (c may be null)
};

enum class Op : uint8_t {
    None,
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    And,
    Or,
    Not,
    Neg,
    Pos,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
};

struct Expr {
    ExprKind kind = ExprKind::Literal;
    Op op = Op::None;
    bool negated = false;  // Test: `is not`
    int depth = 1;         // height of this subtree (bounded, so evaluation cannot overflow)
    Pos pos;
    std::string name;  // Name, Getattr attribute, Filter / Test name
    Value literal;     // Literal: none, bool, int, float or str
    ExprPtr a, b, c;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    ExprPtr dyn_args, dyn_kwargs;
    std::vector<Op> ops;  // Compare
};

// What `for` and `set` assign to: a name, `ns.attr` (set only), or a tuple of targets.
struct Target {
    enum class Kind : uint8_t { Name, Attr, Tuple } kind = Kind::Name;
    Pos pos;
    std::string name;  // Name; Attr: the namespace variable
    std::string attr;  // Attr
    std::vector<Target> items;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind : uint8_t {
    Text,         // text
    Print,        // {{ expr }}
    If,           // branches (the else branch has a null condition)
    For,          // for target in expr [if cond] [recursive]: body [else else_body]
    Set,          // set target = expr
    SetBlock,     // set target [| filters]: body (filters: a chain of Filter exprs)
    Macro,        // macro name(params): body
    CallBlock,    // call(params) expr: body
    FilterBlock,  // filter filters: body
    With,         // with assignments: body
    Scope,        // a body rendered in place (the `generation` tag)
    Break,
    Continue,
};

struct IfBranch {
    ExprPtr cond;
    Body body;
};

struct Param {
    std::string name;
    ExprPtr default_value;  // may be null
};

struct Stmt {
    StmtKind kind = StmtKind::Text;
    Pos pos;
    std::string text;
    ExprPtr expr;  // Print, Set, For (iterable), CallBlock (the call), SetBlock / FilterBlock
                   // (the filter chain, innermost subject null)
    ExprPtr cond;  // For's filter
    bool recursive = false;
    Target target;
    std::vector<IfBranch> branches;
    Body body, else_body;
    std::string name;  // Macro
    std::vector<Param> params;
    std::vector<std::pair<Target, ExprPtr>> assignments;  // With
    // Macro bodies: whether they read these, which makes extra arguments legal.
    bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
};

struct ParseLimits {
    int max_depth = 200;  // nesting of expressions, and of statements
};

// Parses a whole template. Syntax errors throw TemplateError naming line and column.
Body parse(std::string_view source, const ParseLimits& limits = {});

}  // namespace myriad::jinja
