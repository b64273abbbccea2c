//! The CEL environment of DRA device selectors (upstream
//! `staging/src/k8s.io/dynamic-resource-allocation/cel`, `compile.go`), on the `cel` crate
//! (cel-rust).
//!
//! - The one variable is `device`: `device.driver` (string), `device.attributes[domain].name`
//!   and `device.capacity[domain].name`. An attribute written without a domain in the slice
//!   belongs to the driver's domain. `device.allowMultipleAllocations` is the device's
//!   value (`false` when unset).
//! - Attribute values are CEL `int`, `bool`, `string`, or a semantic version for `version`
//!   attributes; capacities are Kubernetes quantities.
//! - Kubernetes library functions added here: `quantity(string)`, `isQuantity(string)` and on
//!   quantities `compareTo`, `isGreaterThan`, `isLessThan`, `asInteger`, `isInteger`,
//!   `asApproximateFloat`, `sign`, `add`, `sub` (upstream `library.Quantity`); `semver(string)`,
//!   `isSemver(string)` and on versions `compareTo`, `isGreaterThan`, `isLessThan`, `major`,
//!   `minor`, `patch` (upstream `library.SemverLib`).
//! - A domain the device has no attribute (or capacity) in reads as an empty map, as upstream's
//!   lazy domain map: ksim creates the empty maps for the quoted domain names that appear in the
//!   expression (strings with a dot, and any string that indexes `attributes` or `capacity`).
//! - Each distinct expression is compiled once per run ([`CelCache`]); an expression longer
//!   than `CELSelectorExpressionMaxLength` (10 Ki) or that does not parse is refused with
//!   upstream's `compilation failed: ...` prefix and cel-rust's parser message.
//!
//! Deliberate differences: cel-rust has no type checker, so a type error shows at evaluation
//! (as a CEL runtime error, which upstream reports at compile time). Upstream's cost limit
//! (`CELSelectorExpressionMaxCost`, 1,000,000) is applied where the API server applies it: the
//! validation of DeviceClasses, ResourceClaims and ResourceClaimTemplates refuses a selector
//! whose estimated worst-case cost exceeds it (`ksim_api::resource::cel_cost`). Upstream also
//! sets it as the runtime `CostLimit` of the program; cel-rust has no cost tracker, so ksim
//! does not count the actual cost. For a selector the API server accepted, on devices within
//! the bounds the estimate assumes (at most 32 attributes and capacities, names of at most 32
//! characters in domains of at most 63, attribute values of at most 64: all checked when a
//! ResourceSlice is loaded), the actual cost never exceeds the estimate, so upstream's
//! runtime limit cannot be reached there either.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Program, Value};
use ksim_api::resource::{Device, DeviceAttribute};

/// `resourceapi.CELSelectorExpressionMaxLength`.
pub const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;
/// `resourceapi.CELSelectorExpressionMaxCost`, enforced by the API validation (see module docs).
pub use ksim_api::resource::cel_cost::MAX_COST;

/// A compiled selector.
pub struct Selector {
    program: Program,
    /// Quoted names with a dot, or indexing `attributes`/`capacity`, in the expression: the
    /// domains that read as empty maps when the device has nothing in them.
    domains: Vec<String>,
    /// The expression reads nothing of the device but `device.driver` (as most DeviceClass
    /// selectors): its verdict is the same on every device of a driver.
    driver_only: bool,
}

/// Compiles a selector expression (upstream `compiler.CompileCELExpression`).
pub fn compile(expression: &str) -> Result<Selector, String> {
    if expression.len() > MAX_EXPRESSION_LENGTH {
        return Err(format!(
            "compilation failed: expression is too long: {} bytes, the limit is {MAX_EXPRESSION_LENGTH}",
            expression.len()
        ));
    }
    let program = Program::compile(expression)
        .map_err(|e| format!("compilation failed: {}", e.to_string().trim()))?;
    let driver_only = reads_only_driver(program.expression());
    Ok(Selector {
        program,
        domains: quoted_domains(expression),
        driver_only,
    })
}

/// Whether every use of the `device` variable in `e` is `device.driver` (and no
/// comprehension binds a variable of that name).
fn reads_only_driver(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Ident(name) => name != "device",
        Expr::Select(sel) => {
            matches!(&sel.operand.expr, Expr::Ident(n) if n == "device") && sel.field == "driver"
                || reads_only_driver(&sel.operand)
        }
        Expr::Call(call) => {
            call.target.as_deref().is_none_or(reads_only_driver)
                && call.args.iter().all(reads_only_driver)
        }
        Expr::Comprehension(c) => {
            let binds_device = c.iter_var == "device"
                || c.iter_var2.as_deref() == Some("device")
                || c.accu_var == "device";
            !binds_device
                && [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter()
                .all(reads_only_driver)
        }
        Expr::List(l) => l.elements.iter().all(reads_only_driver),
        Expr::Map(m) => m.entries.iter().all(|ent| match &ent.expr {
            EntryExpr::MapEntry(me) => reads_only_driver(&me.key) && reads_only_driver(&me.value),
            EntryExpr::StructField(f) => reads_only_driver(&f.value),
        }),
        Expr::Struct(st) => st.entries.iter().all(|ent| match &ent.expr {
            EntryExpr::MapEntry(me) => reads_only_driver(&me.key) && reads_only_driver(&me.value),
            EntryExpr::StructField(f) => reads_only_driver(&f.value),
        }),
        Expr::Literal(_) | Expr::Unspecified => true,
    }
}

fn quoted_domains(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in ['"', '\''] {
        let parts: Vec<&str> = expr.split(q).collect();
        for (i, p) in parts.iter().enumerate() {
            // A domain is a name with a dot, or any name indexing `attributes` or
            // `capacity` (a driver's name needs no dot: `device.attributes["gpu-driver"]`).
            let indexes_a_map = i > 0 && {
                let before = parts[i - 1].trim_end();
                before.ends_with("attributes[") || before.ends_with("capacity[")
            };
            if i % 2 == 1
                && (p.contains('.') || indexes_a_map)
                && !out.iter().any(|o: &String| o == p)
            {
                out.push(p.to_string());
            }
        }
    }
    out
}

/// Compiled selectors by expression text, shared by every cycle of a run.
#[derive(Default)]
pub struct CelCache {
    map: Mutex<BTreeMap<String, Arc<Result<Selector, String>>>>,
}

impl CelCache {
    pub fn get_or_compile(&self, expression: &str) -> Arc<Result<Selector, String>> {
        let mut m = match self.map.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(s) = m.get(expression) {
            return s.clone();
        }
        let s = Arc::new(compile(expression));
        m.insert(expression.to_string(), s.clone());
        s
    }
}

/// The root context with the Kubernetes library functions; one per allocation.
pub fn root_context() -> Context<'static, 'static> {
    let mut ctx = Context::default();
    // `add_function` fails only for names the standard library declares; these are not.
    let _ = ctx.add_function("quantity", quantity_fn);
    let _ = ctx.add_function("isQuantity", |s: Arc<String>| {
        ksim_api::Quantity::parse(&s).is_ok()
    });
    let _ = ctx.add_function("semver", semver_fn);
    let _ = ctx.add_function("isSemver", |s: Arc<String>| Semver::parse(&s).is_some());
    let _ = ctx.add_function("compareTo", compare_to);
    let _ = ctx.add_function("isGreaterThan", |t: This<Value>, o: Value| {
        compare_to(t, o).map(|c| c > 0)
    });
    let _ = ctx.add_function("isLessThan", |t: This<Value>, o: Value| {
        compare_to(t, o).map(|c| c < 0)
    });
    let _ = ctx.add_function(
        "asInteger",
        |This(t): This<Value>| -> Result<i64, ExecutionError> {
            let q = as_quantity(&t, "asInteger")?;
            if q.0 % 1000 != 0 {
                return Err(ExecutionError::function_error(
                    "asInteger",
                    "cannot convert value to integer",
                ));
            }
            Ok(q.0 / 1000)
        },
    );
    let _ = ctx.add_function("isInteger", |This(t): This<Value>| {
        as_quantity(&t, "isInteger").map(|q| q.0 % 1000 == 0)
    });
    let _ = ctx.add_function("asApproximateFloat", |This(t): This<Value>| {
        as_quantity(&t, "asApproximateFloat").map(|q| q.0 as f64 / 1000.0)
    });
    let _ = ctx.add_function("sign", |This(t): This<Value>| {
        as_quantity(&t, "sign").map(|q| q.0.signum())
    });
    let _ = ctx.add_function("add", |This(t): This<Value>, o: Value| {
        let a = as_quantity(&t, "add")?;
        let b = match &o {
            Value::Int(i) => i.saturating_mul(1000),
            v => as_quantity(v, "add")?.0,
        };
        Ok::<Value, ExecutionError>(Value::Opaque(Arc::new(Qty(a.0.saturating_add(b)))))
    });
    let _ = ctx.add_function("sub", |This(t): This<Value>, o: Value| {
        let a = as_quantity(&t, "sub")?;
        let b = match &o {
            Value::Int(i) => i.saturating_mul(1000),
            v => as_quantity(v, "sub")?.0,
        };
        Ok::<Value, ExecutionError>(Value::Opaque(Arc::new(Qty(a.0.saturating_sub(b)))))
    });
    let _ = ctx.add_function("major", |This(t): This<Value>| {
        as_semver(&t, "major").map(|v| v.major)
    });
    let _ = ctx.add_function("minor", |This(t): This<Value>| {
        as_semver(&t, "minor").map(|v| v.minor)
    });
    let _ = ctx.add_function("patch", |This(t): This<Value>| {
        as_semver(&t, "patch").map(|v| v.patch)
    });
    ctx
}

/// A quantity in thousandths (`MilliValue`): what comparisons read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qty(pub i64);

impl Opaque for Qty {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// A semantic version (2.0.0); pre-release and build are compared as text, pre-release
/// versions below the release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semver {
    major: i64,
    minor: i64,
    patch: i64,
    pre: String,
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Semver {
    pub fn parse(s: &str) -> Option<Semver> {
        let no_build = s.split('+').next().unwrap_or("");
        let (core, pre) = match no_build.split_once('-') {
            Some((c, p)) => (c, p.to_string()),
            None => (no_build, String::new()),
        };
        let mut it = core.split('.');
        let mut num = || -> Option<i64> {
            let p = it.next()?;
            if p.is_empty() || (p.len() > 1 && p.starts_with('0')) {
                return None;
            }
            p.parse().ok()
        };
        let (major, minor, patch) = (num()?, num()?, num()?);
        if it.next().is_some() {
            return None;
        }
        Some(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    fn cmp(&self, o: &Semver) -> std::cmp::Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                (false, false) => self.pre.cmp(&o.pre),
            })
    }
}

fn quantity_fn(s: Arc<String>) -> Result<Value, ExecutionError> {
    ksim_api::Quantity::parse(&s)
        .map(|q| Value::Opaque(Arc::new(Qty(q.milli_value()))))
        .map_err(|e| ExecutionError::function_error("quantity", e))
}

fn semver_fn(s: Arc<String>) -> Result<Value, ExecutionError> {
    Semver::parse(&s)
        .map(|v| Value::Opaque(Arc::new(v)))
        .ok_or_else(|| ExecutionError::function_error("semver", "could not parse semver"))
}

fn as_quantity(v: &Value, f: &str) -> Result<Qty, ExecutionError> {
    if let Value::Opaque(o) = v {
        if let Some(q) = o.downcast_ref::<Qty>() {
            return Ok(*q);
        }
    }
    Err(ExecutionError::function_error(
        f,
        "receiver is not a quantity",
    ))
}

fn as_semver(v: &Value, f: &str) -> Result<Semver, ExecutionError> {
    if let Value::Opaque(o) = v {
        if let Some(s) = o.downcast_ref::<Semver>() {
            return Ok(s.clone());
        }
    }
    Err(ExecutionError::function_error(
        f,
        "receiver is not a semver",
    ))
}

fn compare_to(This(t): This<Value>, o: Value) -> Result<i64, ExecutionError> {
    let ord = if let Ok(a) = as_quantity(&t, "compareTo") {
        a.0.cmp(&as_quantity(&o, "compareTo")?.0)
    } else {
        let a = as_semver(&t, "compareTo")?;
        a.cmp(&as_semver(&o, "compareTo")?)
    };
    Ok(ord as i64)
}

/// A device as the `device` variable; built once per device and allocation.
pub struct DeviceValue(Value);

/// Builds the `device` variable for `driver`'s device.
pub fn device_value(driver: &str, device: &Device) -> DeviceValue {
    let mut attrs: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, a) in &device.attributes {
        let (domain, id) = split_qualified(driver, name);
        attrs
            .entry(domain)
            .or_default()
            .insert(id, attribute_value(a));
    }
    let mut caps: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, c) in &device.capacity {
        let (domain, id) = split_qualified(driver, name);
        let milli = c.value.as_ref().map(|q| q.milli_value()).unwrap_or(0);
        caps.entry(domain)
            .or_default()
            .insert(id, Value::Opaque(Arc::new(Qty(milli))));
    }
    let mut m: HashMap<String, Value> = HashMap::new();
    m.insert("driver".into(), Value::from(driver));
    m.insert("attributes".into(), nested(attrs));
    m.insert("capacity".into(), nested(caps));
    m.insert(
        "allowMultipleAllocations".into(),
        Value::Bool(device.allow_multiple_allocations == Some(true)),
    );
    DeviceValue(Value::from(m))
}

fn nested(m: HashMap<String, HashMap<String, Value>>) -> Value {
    let inner: HashMap<String, Value> = m.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
    Value::from(inner)
}

fn split_qualified(driver: &str, name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((d, id)) => (d.to_string(), id.to_string()),
        None => (driver.to_string(), name.to_string()),
    }
}

fn attribute_value(a: &DeviceAttribute) -> Value {
    if let Some(i) = a.int {
        Value::Int(i)
    } else if let Some(b) = a.bool {
        Value::Bool(b)
    } else if let Some(s) = &a.string {
        Value::from(s.as_str())
    } else if let Some(v) = &a.version {
        match Semver::parse(v) {
            Some(s) => Value::Opaque(Arc::new(s)),
            None => Value::from(v.as_str()),
        }
    } else {
        Value::Null
    }
}

impl Selector {
    /// Whether the verdict depends on the device's driver alone.
    pub fn driver_only(&self) -> bool {
        self.driver_only
    }

    /// Evaluates the selector for one device: `Ok(matches)`, or upstream's runtime error text.
    pub fn matches(&self, root: &Context<'_, '_>, device: &DeviceValue) -> Result<bool, String> {
        let mut ctx = root.new_inner_scope();
        let value = if self.domains.is_empty() {
            device.0.clone()
        } else {
            with_domains(&device.0, &self.domains)
        };
        ctx.add_variable_from_value("device", value);
        match self.program.execute(&ctx) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "expression must evaluate to bool, got {:?}",
                other.type_of()
            )),
            Err(e) => Err(lower_first(&e.to_string())),
        }
    }
}

/// upstream's messages start in lower case (`no such key: model`).
fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// `device` with an empty map for each of `domains` that it lacks, in attributes and capacity.
fn with_domains(device: &Value, domains: &[String]) -> Value {
    let Value::Map(m) = device else {
        return device.clone();
    };
    let mut out: HashMap<cel::objects::Key, Value> = (*m.map).clone();
    for field in ["attributes", "capacity"] {
        let key = cel::objects::Key::from(field);
        if let Some(Value::Map(inner)) = out.get(&key) {
            let mut inner: HashMap<cel::objects::Key, Value> = (*inner.map).clone();
            for d in domains {
                inner
                    .entry(cel::objects::Key::from(d.as_str()))
                    .or_insert_with(|| Value::from(HashMap::<String, Value>::new()));
            }
            out.insert(key, Value::from(inner));
        }
    }
    Value::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::resource::DeviceCapacity;

    fn gpu() -> Device {
        let mut d = Device {
            name: "gpu-0".into(),
            ..Default::default()
        };
        d.attributes.insert(
            "model".into(),
            DeviceAttribute {
                string: Some("h100".into()),
                ..Default::default()
            },
        );
        d.attributes.insert(
            "index".into(),
            DeviceAttribute {
                int: Some(3),
                ..Default::default()
            },
        );
        d.attributes.insert(
            "driverVersion".into(),
            DeviceAttribute {
                version: Some("2.4.0".into()),
                ..Default::default()
            },
        );
        d.attributes.insert(
            "other.example.com/nvlink".into(),
            DeviceAttribute {
                bool: Some(true),
                ..Default::default()
            },
        );
        d.capacity.insert(
            "memory".into(),
            DeviceCapacity {
                value: Some(ksim_api::Quantity::parse("80Gi").unwrap()),
                request_policy: None,
            },
        );
        d
    }

    fn eval(expr: &str) -> Result<bool, String> {
        let root = root_context();
        let dv = device_value("gpu.example.com", &gpu());
        compile(expr)?.matches(&root, &dv)
    }

    /// The DRA environment's facts (upstream `compile_test.go` cases, as inputs and outcomes).
    #[test]
    fn dra_environment() {
        let t = [
            (r#"device.driver == "gpu.example.com""#, Ok(true)),
            (r#"device.driver == "other""#, Ok(false)),
            (
                r#"device.attributes["gpu.example.com"].model == "h100""#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.example.com"].index > 2"#,
                Ok(true),
            ),
            (r#"device.attributes["other.example.com"].nvlink"#, Ok(true)),
            (
                r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("64Gi")) >= 0"#,
                Ok(true),
            ),
            (
                r#"device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("80Gi"))"#,
                Ok(false),
            ),
            (
                r#"device.capacity["gpu.example.com"].memory.isLessThan(quantity("100Gi"))"#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("2.3.9"))"#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.example.com"].driverVersion.compareTo(semver("2.4.0")) == 0"#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.example.com"].driverVersion.major() == 2"#,
                Ok(true),
            ),
            // A domain the device has nothing in is an empty map.
            (
                r#"!("x" in device.attributes["dra.example.com"])"#,
                Ok(true),
            ),
            (
                r#"size(device.attributes["dra.example.com"]) == 0"#,
                Ok(true),
            ),
            (r#"device.allowMultipleAllocations == false"#, Ok(true)),
        ];
        for (expr, want) in t {
            assert_eq!(eval(expr), want, "{expr}");
        }
        let err = eval(r#"device.attributes["gpu.example.com"].missing == 1"#).unwrap_err();
        assert!(err.contains("no such key: missing"), "{err}");
        let err = eval(r#"device.driver"#).unwrap_err();
        assert!(err.contains("must evaluate to bool"), "{err}");
        let err = eval(r#"device.driver == "#).unwrap_err();
        assert!(err.starts_with("compilation failed: "), "{err}");
        assert!(compile(&"x".repeat(MAX_EXPRESSION_LENGTH + 1)).is_err());
    }

    #[test]
    fn driver_only_expressions_are_recognized() {
        let only = |e: &str| compile(e).map(|s| s.driver_only());
        assert_eq!(only(r#"device.driver == "a""#), Ok(true));
        assert_eq!(only(r#"device.driver.startsWith("a") && true"#), Ok(true));
        assert_eq!(only(r#"has(device.driver)"#), Ok(true));
        assert_eq!(only("true"), Ok(true));
        assert_eq!(only(r#"device.attributes["a"].x == 1"#), Ok(false));
        assert_eq!(
            only(r#"device.driver == "a" && device.capacity["a"].m.isGreaterThan(quantity("1"))"#),
            Ok(false)
        );
        assert_eq!(only(r#"device["driver"] == "a""#), Ok(false));
        assert_eq!(only("device == null"), Ok(false));
        // A comprehension variable named `device` is not the device.
        assert_eq!(only(r#"["a"].exists(device, device == "a")"#), Ok(false));
        assert_eq!(only(r#"["a"].exists(d, d == device.driver)"#), Ok(true));
    }

    #[test]
    fn cache_compiles_once() {
        let c = CelCache::default();
        let a = c.get_or_compile("true");
        let b = c.get_or_compile("true");
        assert!(Arc::ptr_eq(&a, &b));
    }
}
