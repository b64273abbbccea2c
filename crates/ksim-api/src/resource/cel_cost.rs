//! The worst-case cost of a DRA device selector, as the API server estimates it before it
//! accepts a DeviceClass, ResourceClaim or ResourceClaimTemplate (upstream
//! `pkg/apis/resource/validation`, `validateCELSelector`: `dracel.CompileCELExpression` then
//! `result.MaxCost > resource.CELSelectorExpressionMaxCost` → `Forbidden: too complex, exceeds
//! cost limit`).
//!
//! Upstream's estimate is cel-go's `checker.Cost` over the type-checked AST, with the
//! Kubernetes `library.CostEstimator` (the cost of the Kubernetes library functions) and the
//! DRA `sizeEstimator` of `dynamic-resource-allocation/cel/compile.go`, which bounds what a
//! device can hold: at most 32 domains in `device.attributes` / `device.capacity` and 32 names
//! per domain (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`), domains of 63 characters
//! (`DeviceMaxDomainLength`), names of 32 (`DeviceMaxIDLength`), attribute values of 64
//! (`DeviceAttributeMaxValueLength`), `device.driver` of 63 (`DriverNameMaxLength`).
//!
//! ksim's `cel` crate parses (and expands the macros `all`, `exists`, `exists_one`, `map`,
//! `filter` exactly as cel-go does) but has no type checker, so this module walks the parsed
//! AST with the small type inference those rules need: the types of `device` and its fields,
//! literals, container element types, the result types of the operators and library
//! functions, and iteration variables. The cost rules are cel-go's:
//!
//! - a literal costs 0, an identifier 1, a field selection 1 on a map or object (0 on a
//!   dynamic value) plus its operand, a presence test (`has()`) its operand only (the
//!   Kubernetes base environment sets `checker.PresenceTestHasCost(false)`); a list literal
//!   10, a map literal 30, plus their elements;
//! - a call costs its target and arguments plus the function's own cost, the largest among the
//!   overloads the argument types allow: 1 for O(1) functions; `&&` / `||` nothing of their
//!   own; `?:` the condition plus the dearer branch; `==`, `!=` and string/bytes ordering
//!   `⌈0.1 × the smaller maximum size⌉`; `+` on strings or bytes `⌈0.1 × (sum of sizes)⌉`, on
//!   lists 1; `in` a list its size; `contains` the product of both traversals, `startsWith` /
//!   `endsWith` the argument's traversal, `matches` `⌈0.1 × (size+1)⌉ × ⌈0.25 × regex size⌉`;
//!   the Kubernetes library by name (`lowerAscii`, `upperAscii`, `trim`, `substring`,
//!   `replace`, `split`, `join`, `find`, `findAll`, `indexOf`, `lastIndexOf`, `isSorted`,
//!   `sum`, `min`, `max`, `url`; the quantity methods 1);
//! - a comprehension (a macro) costs its range, its initial value and its result, plus the
//!   range's maximum size times (loop condition + loop step); `cel.bind` (not expanded by the
//!   `cel` crate) costs as cel-go's `costBind`.
//!
//! Sizes follow cel-go's `computeSize`: a call's result size, a literal's length, the DRA size
//! estimator for a path from `device`, 1 for scalars, a local variable's size; anything else is
//! unknown (0 to 2^64 − 1), which makes a traversal over it cost the maximum.

use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};

/// `resource.CELSelectorExpressionMaxCost`.
pub const MAX_COST: u64 = 1_000_000;

/// `common.StringTraversalCostFactor`.
const STRING_TRAVERSAL: f64 = 0.1;
/// `common.RegexStringLengthCostFactor`.
const REGEX_LENGTH: f64 = 0.25;
/// `common.ListCreateBaseCost`, `MapCreateBaseCost`, `StructCreateBaseCost`.
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;

/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
const MAX_ENTRIES: u64 = 32;
const DOMAIN_MAX: u64 = 63;
const ID_MAX: u64 = 32;
const DRIVER_MAX: u64 = 63;
const ATTRIBUTE_VALUE_MAX: u64 = 64;

/// A size range (`checker.SizeEstimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size {
    min: u64,
    max: u64,
}

const UNKNOWN: Size = Size {
    min: 0,
    max: u64::MAX,
};

impl Size {
    fn fixed(n: u64) -> Size {
        Size { min: n, max: n }
    }
    fn add(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }
    fn mul(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }
    fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
    /// `MultiplyByCostFactor` (of the maximum; only maxima are compared with the limit).
    fn factor(self, f: f64) -> u64 {
        factor(self.max, f)
    }
}

/// `multiplyByCostFactor`: rounded up, saturating.
fn factor(x: u64, f: f64) -> u64 {
    let v = (x as f64 * f).ceil();
    if v >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        v as u64
    }
}

/// The DRA environment's declared types along a path from `device` (upstream's `DeclType`s,
/// with their `MaxElements`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decl {
    Device,
    Driver,
    MultiAlloc,
    AttrsOuter,
    AttrsInner,
    Attribute,
    CapsOuter,
    CapsInner,
    Quantity,
    Domain,
    Id,
}

/// A step of a field path (`Path()`: field names, `@items`, `@keys`, `@values`).
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Field(&'a str),
    Items,
    Keys,
    Values,
}

impl Decl {
    fn max_elements(self) -> u64 {
        match self {
            Decl::Device | Decl::Quantity => 0,
            Decl::Driver => DRIVER_MAX,
            Decl::MultiAlloc => 1,
            Decl::AttrsOuter | Decl::AttrsInner | Decl::CapsOuter | Decl::CapsInner => MAX_ENTRIES,
            Decl::Attribute => ATTRIBUTE_VALUE_MAX,
            Decl::Domain => DOMAIN_MAX,
            Decl::Id => ID_MAX,
        }
    }

    /// One step of upstream's `sizeEstimator.EstimateSize` walk.
    fn step(self, s: Step<'_>) -> Option<Decl> {
        use Decl::*;
        match (self, s) {
            (Device, Step::Field("driver")) => Some(Driver),
            (Device, Step::Field("allowMultipleAllocations")) => Some(MultiAlloc),
            (Device, Step::Field("attributes")) => Some(AttrsOuter),
            (Device, Step::Field("capacity")) => Some(CapsOuter),
            (AttrsOuter, Step::Items | Step::Values) => Some(AttrsInner),
            (CapsOuter, Step::Items | Step::Values) => Some(CapsInner),
            (AttrsOuter | CapsOuter | AttrsInner | CapsInner, Step::Keys) => {
                Some(if matches!(self, AttrsOuter | CapsOuter) {
                    Domain
                } else {
                    Id
                })
            }
            // Any name in a domain's attribute map has the attribute type.
            (AttrsInner, Step::Items | Step::Values | Step::Field(_)) => Some(Attribute),
            (CapsInner, Step::Items | Step::Values) => Some(Quantity),
            _ => None,
        }
    }
}

/// The types the inference tells apart (cel-go's kinds, as far as the cost rules read them).
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// `kubernetes.DRADevice` (an object: selecting a field costs 1).
    Device,
    /// A Kubernetes library object (quantity, semver, URL, ...).
    Opaque,
    /// Dynamic, or an attribute value (declared as `any`): anything.
    Dyn,
}

impl Ty {
    fn could_be_string(&self) -> bool {
        matches!(self, Ty::String | Ty::Dyn)
    }
    fn could_be_bytes(&self) -> bool {
        matches!(self, Ty::Bytes | Ty::Dyn)
    }
    fn could_be_list(&self) -> bool {
        matches!(self, Ty::List(_) | Ty::Dyn)
    }
    fn could_be_numeric(&self) -> bool {
        matches!(
            self,
            Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Timestamp | Ty::Dyn
        )
    }
    fn could_be_map(&self) -> bool {
        matches!(self, Ty::Map(..) | Ty::Dyn)
    }
    /// `isScalar`: a size of 1.
    fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint
        )
    }
    fn elem(&self) -> Ty {
        match self {
            Ty::List(t) => (**t).clone(),
            _ => Ty::Dyn,
        }
    }
}

/// The sizes of a container's entries (`entrySizeEstimate`).
#[derive(Debug, Clone, Copy)]
struct Entry {
    list: bool,
    key: Size,
    val: Size,
}

impl Entry {
    fn union(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
        let (a, b) = (a?, b?);
        Some(Entry {
            list: a.list,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        })
    }
}

/// What the walk knows of an expression once costed.
#[derive(Debug, Clone)]
struct Node {
    cost: u64,
    ty: Ty,
    /// Its path from `device` (None: not reachable from `device`).
    decl: Option<Decl>,
    /// `computeSize` (None: unknown).
    size: Option<Size>,
    entry: Option<Entry>,
}

impl Node {
    fn size_or_unknown(&self) -> Size {
        self.size.unwrap_or(UNKNOWN)
    }
}

/// A local variable (comprehension variables, `cel.bind`).
#[derive(Debug, Clone)]
struct Var {
    name: String,
    ty: Ty,
    decl: Option<Decl>,
    size: Option<Size>,
    entry: Option<Entry>,
}

/// The worst-case cost upstream estimates for `expression` (`CompilationResult.MaxCost`), or
/// the parser's message when it does not parse.
pub fn estimate(expression: &str) -> Result<u64, String> {
    let program = cel::Program::compile(expression).map_err(|e| e.to_string())?;
    Ok(estimate_ast(program.expression()))
}

/// [`estimate`] of a parsed expression.
pub fn estimate_ast(e: &IdedExpr) -> u64 {
    Coster { vars: Vec::new() }.cost(e).cost
}

struct Coster {
    vars: Vec<Var>,
}

/// `computeSize` from the pieces the caller knows, in upstream's order.
fn compute_size(
    computed: Option<Size>,
    literal: Option<Size>,
    decl: Option<Decl>,
    ty: &Ty,
    var: Option<Size>,
) -> Option<Size> {
    computed
        .or(literal)
        .or(decl.map(|d| Size {
            min: 0,
            max: d.max_elements(),
        }))
        .or(ty.scalar().then(|| Size::fixed(1)))
        .or(var)
}

impl Coster {
    fn var(&self, name: &str) -> Option<&Var> {
        self.vars.iter().rev().find(|v| v.name == name)
    }

    fn cost(&mut self, e: &IdedExpr) -> Node {
        match &e.expr {
            Expr::Literal(l) => {
                let (ty, size) = match l {
                    LiteralValue::Boolean(_) => (Ty::Bool, 1),
                    LiteralValue::Int(_) => (Ty::Int, 1),
                    LiteralValue::UInt(_) => (Ty::Uint, 1),
                    LiteralValue::Double(_) => (Ty::Double, 1),
                    LiteralValue::Null => (Ty::Null, 1),
                    LiteralValue::String(s) => (Ty::String, s.inner().chars().count() as u64),
                    LiteralValue::Bytes(b) => (Ty::Bytes, b.inner().len() as u64),
                };
                Node {
                    cost: 0,
                    ty,
                    decl: None,
                    size: Some(Size::fixed(size)),
                    entry: None,
                }
            }
            Expr::Ident(name) => {
                let (ty, decl, var_size, entry) = match self.var(name) {
                    Some(v) => (v.ty.clone(), v.decl, v.size, v.entry),
                    None if name == "device" => (Ty::Device, Some(Decl::Device), None, None),
                    None => (Ty::Dyn, None, None, None),
                };
                let size = compute_size(None, None, decl, &ty, var_size);
                Node {
                    cost: 1,
                    ty,
                    decl,
                    size,
                    entry,
                }
            }
            Expr::Select(sel) => {
                let op = self.cost(&sel.operand);
                if sel.test {
                    // The Kubernetes base environment keeps has() free
                    // (`checker.PresenceTestHasCost(false)`).
                    return Node {
                        cost: op.cost,
                        ty: Ty::Bool,
                        decl: None,
                        size: Some(Size::fixed(1)),
                        entry: None,
                    };
                }
                let own = match op.ty {
                    Ty::Map(..) | Ty::Device => 1,
                    _ => 0,
                };
                let ty = match (&op.ty, sel.field.as_str()) {
                    (Ty::Device, "driver") => Ty::String,
                    (Ty::Device, "allowMultipleAllocations") => Ty::Bool,
                    (Ty::Device, "attributes") => attrs_ty(),
                    (Ty::Device, "capacity") => caps_ty(),
                    (Ty::Map(_, v), _) => (**v).clone(),
                    _ => Ty::Dyn,
                };
                let decl = op.decl.and_then(|d| d.step(Step::Field(&sel.field)));
                let size = compute_size(None, None, decl, &ty, None);
                Node {
                    cost: op.cost.saturating_add(own),
                    ty,
                    decl,
                    size,
                    entry: None,
                }
            }
            Expr::List(l) => {
                let mut cost = LIST_CREATE;
                let mut item = if l.elements.is_empty() {
                    Size::fixed(0)
                } else {
                    Size {
                        min: u64::MAX,
                        max: 0,
                    }
                };
                let mut elem: Option<Ty> = None;
                for x in &l.elements {
                    let n = self.cost(x);
                    cost = cost.saturating_add(n.cost);
                    item = item.union(n.size_or_unknown());
                    elem = Some(match elem {
                        None => n.ty,
                        Some(t) if t == n.ty => t,
                        Some(_) => Ty::Dyn,
                    });
                }
                Node {
                    cost,
                    ty: Ty::List(Box::new(elem.unwrap_or(Ty::Dyn))),
                    decl: None,
                    size: Some(Size::fixed(l.elements.len() as u64)),
                    entry: Some(Entry {
                        list: true,
                        key: Size::fixed(1),
                        val: item,
                    }),
                }
            }
            Expr::Map(m) => {
                let mut cost = MAP_CREATE;
                let empty = Size {
                    min: if m.entries.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                let (mut ks, mut vs) = (empty, empty);
                let (mut kt, mut vt): (Option<Ty>, Option<Ty>) = (None, None);
                for ent in &m.entries {
                    let EntryExpr::MapEntry(me) = &ent.expr else {
                        continue;
                    };
                    let k = self.cost(&me.key);
                    let v = self.cost(&me.value);
                    cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                    ks = ks.union(k.size_or_unknown());
                    vs = vs.union(v.size_or_unknown());
                    kt = Some(join(kt, k.ty));
                    vt = Some(join(vt, v.ty));
                }
                Node {
                    cost,
                    ty: Ty::Map(
                        Box::new(kt.unwrap_or(Ty::Dyn)),
                        Box::new(vt.unwrap_or(Ty::Dyn)),
                    ),
                    decl: None,
                    size: Some(Size::fixed(m.entries.len() as u64)),
                    entry: Some(Entry {
                        list: false,
                        key: ks,
                        val: vs,
                    }),
                }
            }
            Expr::Struct(s) => {
                let mut cost = STRUCT_CREATE;
                for ent in &s.entries {
                    if let EntryExpr::StructField(f) = &ent.expr {
                        cost = cost.saturating_add(self.cost(&f.value).cost);
                    }
                }
                Node {
                    cost,
                    ty: Ty::Opaque,
                    decl: None,
                    size: None,
                    entry: None,
                }
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Call(call) => self.call(call),
            Expr::Unspecified => Node {
                cost: 0,
                ty: Ty::Dyn,
                decl: None,
                size: None,
                entry: None,
            },
        }
    }

    /// `costComprehension`.
    fn comprehension(&mut self, c: &cel::common::ast::ComprehensionExpr) -> Node {
        let range = self.cost(&c.iter_range);
        let init = self.cost(&c.accu_init);
        let mut cost = range.cost.saturating_add(init.cost);
        let base = self.vars.len();
        self.vars.push(Var {
            name: c.accu_var.clone(),
            ty: init.ty.clone(),
            decl: init.decl,
            size: init.size,
            entry: init.entry,
        });
        // `pushIterSingle` (cel-rust's macros have one iteration variable).
        let list = match range.entry {
            Some(e) => e.list,
            None => matches!(range.ty, Ty::List(_)),
        };
        let (size, step, ty) = if list {
            (range.entry.map(|e| e.val), Step::Items, range.ty.elem())
        } else {
            let kt = match &range.ty {
                Ty::Map(k, _) => (**k).clone(),
                _ => Ty::Dyn,
            };
            (range.entry.map(|e| e.key), Step::Keys, kt)
        };
        self.vars.push(Var {
            name: c.iter_var.clone(),
            ty,
            decl: range.decl.and_then(|d| d.step(step)),
            size,
            entry: None,
        });
        let cond = self.cost(&c.loop_cond);
        let step = self.cost(&c.loop_step);
        self.vars.truncate(base + 1);
        // The result sees the accumulator with the step's type (e.g. `map`'s list).
        if let Some(v) = self.vars.last_mut() {
            if matches!(init.ty, Ty::List(_) | Ty::Map(..)) {
                v.ty = step.ty.clone();
            }
        }
        let result = self.cost(&c.result);
        self.vars.truncate(base);
        cost = cost.saturating_add(result.cost);
        let count = range.size_or_unknown();
        cost = cost.saturating_add(
            count
                .max
                .saturating_mul(step.cost.saturating_add(cond.cost)),
        );
        let (size, entry) = match &c.accu_init.expr {
            Expr::Literal(_) => (init.size, None),
            Expr::List(_) | Expr::Map(_) => (Some(count), step.entry),
            _ => (None, None),
        };
        let size = compute_size(size, None, None, &result.ty, None);
        Node {
            cost,
            ty: result.ty,
            decl: None,
            size,
            entry,
        }
    }

    fn call(&mut self, call: &cel::common::ast::CallExpr) -> Node {
        let f = call.func_name.as_str();
        // `cel.bind(var, init, result)`, which cel-go expands and costs as `costBind`.
        if f == "bind" && call.args.len() == 3 {
            if let (Some(t), Expr::Ident(var)) = (&call.target, &call.args[0].expr) {
                if matches!(&t.expr, Expr::Ident(c) if c == "cel") {
                    let init = self.cost(&call.args[1]);
                    self.vars.push(Var {
                        name: var.clone(),
                        ty: init.ty.clone(),
                        decl: init.decl,
                        size: init.size,
                        entry: init.entry,
                    });
                    let result = self.cost(&call.args[2]);
                    self.vars.pop();
                    return Node {
                        cost: LIST_CREATE
                            .saturating_add(init.cost)
                            .saturating_add(result.cost),
                        ..result
                    };
                }
            }
        }
        let args: Vec<Node> = call.args.iter().map(|a| self.cost(a)).collect();
        let target = call.target.as_ref().map(|t| self.cost(t));
        let arg_sum = args.iter().fold(0u64, |s, a| s.saturating_add(a.cost));
        let target_cost = target.as_ref().map_or(0, |t| t.cost);
        let sz = |i: usize| args.get(i).map_or(UNKNOWN, Node::size_or_unknown);
        let tsz = target.as_ref().map_or(UNKNOWN, Node::size_or_unknown);
        let ty_of = |i: usize| args.get(i).map_or(Ty::Dyn, |a| a.ty.clone());
        // (own cost, result size, result type, path, entry sizes)
        let mut decl = None;
        let mut entry = None;
        let (own, result_size, ty): (u64, Option<Size>, Ty) = match f {
            "dyn" if args.len() == 1 => {
                return Node {
                    cost: args[0].cost.saturating_add(1),
                    ty: Ty::Dyn,
                    decl: None,
                    ..args[0].clone()
                };
            }
            operators::LOGICAL_AND | operators::LOGICAL_OR if args.len() == 2 => {
                (0, None, Ty::Bool)
            }
            operators::CONDITIONAL if args.len() == 3 => {
                entry = Entry::union(args[1].entry, args[2].entry);
                let own = args[1].cost.max(args[2].cost);
                return Node {
                    cost: args[0].cost.saturating_add(own),
                    ty: join(Some(args[1].ty.clone()), args[2].ty.clone()),
                    decl: None,
                    size: Some(sz(1).union(sz(2))),
                    entry,
                };
            }
            operators::EQUALS | operators::NOT_EQUALS if args.len() == 2 => {
                (traversal_of_smaller(sz(0), sz(1)), None, Ty::Bool)
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
                if args.len() == 2 =>
            {
                let (a, b) = (ty_of(0), ty_of(1));
                let textual = (a.could_be_string() && b.could_be_string())
                    || (a.could_be_bytes() && b.could_be_bytes());
                let numeric =
                    !(matches!(a, Ty::String | Ty::Bytes) || matches!(b, Ty::String | Ty::Bytes));
                let mut own = if numeric || !textual { 1 } else { 0 };
                if textual {
                    own = own.max(traversal_of_smaller(sz(0), sz(1)));
                }
                (own, None, Ty::Bool)
            }
            operators::ADD if args.len() == 2 => {
                let (a, b) = (ty_of(0), ty_of(1));
                let sum = sz(0).add(sz(1));
                let text = (a.could_be_string() && b.could_be_string())
                    || (a.could_be_bytes() && b.could_be_bytes());
                let list = a.could_be_list() && b.could_be_list();
                let numeric = a.could_be_numeric() && b.could_be_numeric();
                let mut own = 0u64;
                let mut size: Option<Size> = None;
                if text {
                    own = own.max(sum.factor(STRING_TRAVERSAL));
                    size = Some(sum);
                }
                if list {
                    own = own.max(1);
                    size = Some(sum);
                    entry = Entry::union(args[0].entry, args[1].entry);
                }
                if numeric || !(text || list) {
                    own = own.max(1);
                }
                let ty = match (&a, &b) {
                    (Ty::String, _) | (_, Ty::String) => Ty::String,
                    (Ty::Bytes, _) | (_, Ty::Bytes) => Ty::Bytes,
                    (Ty::List(_), Ty::List(_)) => join(Some(a.clone()), b.clone()),
                    (Ty::List(_), _) => a.clone(),
                    (Ty::Dyn, _) => b.clone(),
                    _ => a.clone(),
                };
                (own, size, ty)
            }
            operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE | operators::MODULO
                if args.len() == 2 =>
            {
                let (a, b) = (ty_of(0), ty_of(1));
                let ty = if a == Ty::Dyn { b } else { a };
                (1, None, ty)
            }
            operators::NEGATE if args.len() == 1 => (1, None, ty_of(0)),
            operators::IN if args.len() == 2 => {
                let r = ty_of(1);
                let mut own = 0u64;
                if r.could_be_list() {
                    own = own.max(sz(1).factor(1.0));
                }
                if r.could_be_map() || !r.could_be_list() {
                    own = own.max(1);
                }
                (own, None, Ty::Bool)
            }
            operators::INDEX if args.len() == 2 => {
                let t = ty_of(0);
                let (vt, step) = match &t {
                    Ty::List(e) => ((**e).clone(), Step::Items),
                    Ty::Map(_, v) => ((**v).clone(), Step::Values),
                    _ => (Ty::Dyn, Step::Values),
                };
                decl = args[0].decl.and_then(|d| d.step(step));
                let size = args[0].entry.map(|e| e.val);
                (1, size, vt)
            }
            // The Kubernetes library (`library.CostEstimator.EstimateCallCost`, by name).
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if target.is_some() => {
                let t = target.as_ref().map_or(Ty::Dyn, |t| t.ty.clone());
                let own = match &t {
                    Ty::List(e) => {
                        // The element node: its path (`@items`) or nothing else known.
                        let el_decl = target
                            .as_ref()
                            .and_then(|t| t.decl)
                            .and_then(|d| d.step(Step::Items));
                        let mut el = 1u64;
                        if matches!(**e, Ty::String | Ty::Bytes) {
                            let s = el_decl.map_or(UNKNOWN, |d| Size {
                                min: 0,
                                max: d.max_elements(),
                            });
                            el = el.saturating_add(s.factor(STRING_TRAVERSAL));
                        }
                        tsz.max.saturating_mul(el)
                    }
                    _ => tsz.factor(STRING_TRAVERSAL),
                };
                let ty = match (f, &t) {
                    ("isSorted", _) => Ty::Bool,
                    ("indexOf" | "lastIndexOf", _) => Ty::Int,
                    (_, Ty::List(e)) => (**e).clone(),
                    _ => Ty::Dyn,
                };
                (own, None, ty)
            }
            "url" if args.len() == 1 && target.is_none() => {
                (sz(0).factor(STRING_TRAVERSAL), None, Ty::Opaque)
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" if target.is_some() => {
                (tsz.factor(STRING_TRAVERSAL), Some(tsz), Ty::String)
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let (from, with) = (sz(0), sz(1));
                let mut count = Size { min: 0, max: 0 };
                let mut kept = Size { min: 0, max: 0 };
                if from.min == 0 {
                    count.max = if tsz.max < u64::MAX {
                        tsz.max + 1
                    } else {
                        tsz.max
                    };
                    kept.max = tsz.max;
                } else if with.max <= from.min {
                    kept.max = tsz.max;
                } else {
                    count.max = factor(tsz.max, 1.0 / from.min as f64);
                }
                if from.max == 0 {
                    count.min = if tsz.min < u64::MAX {
                        tsz.min + 1
                    } else {
                        tsz.min
                    };
                    kept.min = tsz.min;
                } else if from.max <= with.min {
                    kept.min = tsz.min;
                } else {
                    count.min = factor(tsz.min, 1.0 / from.max as f64);
                }
                let size = count.mul(with).add(kept);
                (tsz.factor(2.0 * STRING_TRAVERSAL), Some(size), Ty::String)
            }
            "split" if target.is_some() => {
                let mut max = tsz.max;
                if let Some(a) = call.args.get(1) {
                    if let Expr::Literal(LiteralValue::Int(i)) = &a.expr {
                        max = (*i.inner()).max(0) as u64;
                    }
                    if let Expr::Literal(LiteralValue::UInt(u)) = &a.expr {
                        max = *u.inner();
                    }
                }
                (
                    tsz.factor(2.0 * STRING_TRAVERSAL),
                    Some(Size { min: 0, max }),
                    Ty::List(Box::new(Ty::String)),
                )
            }
            "join" if target.is_some() => {
                let el = target
                    .as_ref()
                    .and_then(|t| t.decl)
                    .and_then(|d| d.step(Step::Items))
                    .map_or(UNKNOWN, |d| Size {
                        min: 0,
                        max: d.max_elements(),
                    });
                let mut size = if matches!(target.as_ref().map(|t| &t.ty), Some(Ty::List(_))) {
                    tsz.mul(el)
                } else {
                    Size { min: 0, max: 0 }
                };
                if !args.is_empty() {
                    let seps = Size {
                        min: tsz.min.saturating_sub(1),
                        max: tsz.max.saturating_sub(1),
                    };
                    size = size.add(sz(0).mul(seps));
                }
                (size.factor(STRING_TRAVERSAL), Some(size), Ty::String)
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                let s = tsz.add(Size::fixed(1)).factor(STRING_TRAVERSAL);
                let r = sz(0).factor(REGEX_LENGTH);
                let ty = if f == "find" {
                    Ty::String
                } else {
                    Ty::List(Box::new(Ty::String))
                };
                (
                    s.saturating_mul(r),
                    Some(Size {
                        min: 0,
                        max: tsz.max,
                    }),
                    ty,
                )
            }
            "sign" | "asInteger" | "compareTo" => (1, None, Ty::Int),
            "isInteger" | "isGreaterThan" | "isLessThan" => (1, None, Ty::Bool),
            "asApproximateFloat" => (1, None, Ty::Double),
            "add" | "sub" => (1, None, Ty::Opaque),
            // cel-go's own rules (`functionCost`, by overload).
            "matches" if target.is_some() && args.len() == 1 => {
                let s = tsz.add(Size::fixed(1)).factor(STRING_TRAVERSAL);
                let r = sz(0).factor(REGEX_LENGTH);
                (s.saturating_mul(r), None, Ty::Bool)
            }
            "contains" if target.is_some() && args.len() == 1 => {
                let s = tsz.factor(STRING_TRAVERSAL);
                let r = sz(0).factor(STRING_TRAVERSAL);
                (s.saturating_mul(r), None, Ty::Bool)
            }
            "startsWith" | "endsWith" if target.is_some() && args.len() == 1 => {
                (sz(0).factor(STRING_TRAVERSAL), None, Ty::Bool)
            }
            "string" if args.len() == 1 && target.is_none() => {
                let a = ty_of(0);
                if a.could_be_bytes() {
                    let s = sz(0);
                    let floor = u64::from(a == Ty::Dyn);
                    (
                        s.factor(STRING_TRAVERSAL).max(floor),
                        Some(Size {
                            min: s.min / 4,
                            max: s.max,
                        }),
                        Ty::String,
                    )
                } else {
                    (1, None, Ty::String)
                }
            }
            "bytes" if args.len() == 1 && target.is_none() => {
                let a = ty_of(0);
                if a.could_be_string() {
                    let s = sz(0);
                    let floor = u64::from(a == Ty::Dyn);
                    (
                        s.factor(STRING_TRAVERSAL).max(floor),
                        Some(Size {
                            min: s.min,
                            max: s.max.saturating_mul(4),
                        }),
                        Ty::Bytes,
                    )
                } else {
                    (1, None, Ty::Bytes)
                }
            }
            _ => (1, None, result_type(f)),
        };
        let size = compute_size(result_size, None, decl, &ty, None);
        Node {
            cost: target_cost.saturating_add(arg_sum).saturating_add(own),
            ty,
            decl,
            size,
            entry,
        }
    }
}

/// `==`, `!=` and string ordering: the traversal of the smaller operand.
fn traversal_of_smaller(a: Size, b: Size) -> u64 {
    factor(a.max.min(b.max), STRING_TRAVERSAL)
}

fn join(a: Option<Ty>, b: Ty) -> Ty {
    match a {
        None => b,
        Some(a) if a == b => a,
        // An empty list literal (`[]`, the accumulator of `map` and `filter`) joins any list.
        Some(Ty::List(x)) if *x == Ty::Dyn && matches!(b, Ty::List(_)) => b,
        Some(a @ Ty::List(_)) if b == Ty::List(Box::new(Ty::Dyn)) => a,
        Some(_) => Ty::Dyn,
    }
}

fn attrs_ty() -> Ty {
    Ty::Map(
        Box::new(Ty::String),
        Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Dyn))),
    )
}

fn caps_ty() -> Ty {
    Ty::Map(
        Box::new(Ty::String),
        Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Opaque))),
    )
}

/// The result type of an O(1) function (what later rules read: scalars have size 1).
fn result_type(f: &str) -> Ty {
    match f {
        "size" | "int" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
        | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getMonth"
        | "getFullYear" | "major" | "minor" | "patch" | "charAt_index" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool"
        | "isQuantity"
        | "isSemver"
        | "isURL"
        | "isIP"
        | "isCIDR"
        | "!_"
        | "@not_strictly_false" => Ty::Bool,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "charAt" | "format" | "quote" | "getScheme" | "getHost" | "getHostname" | "getPort"
        | "getEscapedPath" => Ty::String,
        _ => Ty::Opaque,
    }
}

#[cfg(test)]
mod tests;
