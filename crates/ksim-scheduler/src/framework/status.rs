//! `fwk.Status`: a code, the reasons, and the plugin that produced it.

use std::borrow::Cow;
use std::fmt;

/// Upstream's status codes, in upstream's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Success,
    Error,
    Unschedulable,
    UnschedulableAndUnresolvable,
    Wait,
    Skip,
    Pending,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason text; fixed texts are borrowed so that a failing Filter on the hot path only
/// allocates when its text depends on the input.
pub type Reason = Cow<'static, str>;

/// The reasons of a [`Status`], read as a slice of [`Reason`]. Nearly every rejection has one
/// reason (a node rejected by NodeResourcesFit for cpu alone, say), so one reason is kept
/// inline: a status with a fixed text allocates nothing, and copying or dropping it frees
/// nothing. Equality, order and iteration are the slice's whatever the representation.
#[derive(Clone, Default)]
pub struct Reasons(Repr);

#[derive(Clone, Default)]
enum Repr {
    #[default]
    None,
    One(Reason),
    Many(Vec<Reason>),
}

impl Reasons {
    /// No reason.
    pub const fn new() -> Reasons {
        Reasons(Repr::None)
    }

    /// One reason (`const`, for statuses built once).
    pub const fn one(r: Reason) -> Reasons {
        Reasons(Repr::One(r))
    }

    /// The reasons as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Reason] {
        match &self.0 {
            Repr::None => &[],
            Repr::One(r) => std::slice::from_ref(r),
            Repr::Many(v) => v,
        }
    }

    /// Appends a reason.
    pub fn push(&mut self, r: Reason) {
        self.0 = match std::mem::take(&mut self.0) {
            Repr::None => Repr::One(r),
            Repr::One(a) => Repr::Many(vec![a, r]),
            Repr::Many(mut v) => {
                v.push(r);
                Repr::Many(v)
            }
        };
    }
}

impl std::ops::Deref for Reasons {
    type Target = [Reason];
    #[inline]
    fn deref(&self) -> &[Reason] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a Reasons {
    type Item = &'a Reason;
    type IntoIter = std::slice::Iter<'a, Reason>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl From<Vec<Reason>> for Reasons {
    fn from(mut v: Vec<Reason>) -> Reasons {
        match v.len() {
            0 => Reasons::new(),
            1 => Reasons::one(v.pop().unwrap_or_default()),
            _ => Reasons(Repr::Many(v)),
        }
    }
}

impl FromIterator<Reason> for Reasons {
    fn from_iter<I: IntoIterator<Item = Reason>>(iter: I) -> Reasons {
        let mut r = Reasons::new();
        for x in iter {
            r.push(x);
        }
        r
    }
}

impl PartialEq for Reasons {
    fn eq(&self, other: &Reasons) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Reasons {}

impl fmt::Debug for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// The result of running a plugin. `Status::success()` allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Reasons,
    /// The plugin that produced a non-success status ("" when the framework did).
    pub plugin: &'static str,
}

impl Default for Status {
    fn default() -> Self {
        Status::success()
    }
}

impl Status {
    pub const fn success() -> Status {
        Status {
            code: Code::Success,
            reasons: Reasons::new(),
            plugin: "",
        }
    }

    pub fn new(code: Code, reason: impl Into<Reason>) -> Status {
        Status {
            code,
            reasons: Reasons::one(reason.into()),
            plugin: "",
        }
    }

    pub fn with_reasons(code: Code, reasons: Vec<Reason>) -> Status {
        Status {
            code,
            reasons: reasons.into(),
            plugin: "",
        }
    }

    pub fn unschedulable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }

    pub fn unresolvable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    pub fn error(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Error, reason)
    }

    pub fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Reasons::new(),
            plugin: "",
        }
    }

    /// A fixed rejection already named by its plugin, for a `static` that Filter shares across
    /// nodes ([`FilterResult::shared`]): the framework would name it so anyway.
    pub const fn fixed(code: Code, reason: &'static str, plugin: &'static str) -> Status {
        Status {
            code,
            reasons: Reasons::one(Cow::Borrowed(reason)),
            plugin,
        }
    }

    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = plugin;
        self
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Unschedulable or UnschedulableAndUnresolvable (upstream `IsRejected` also counts Pending).
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }

    /// The reasons joined by ", " (upstream `Message()`).
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message())
    }
}

/// What a Filter plugin returns for one node. Passing is by far the common case on the hot
/// path (every sampled node, every active plugin): nothing to build or drop. A rejection either
/// boxes its own [`Status`] or, for a fixed verdict a plugin gives on many nodes (a node short of
/// cpu), points at a `static` one, so that rejecting a thousand nodes allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct FilterResult(Verdict);

#[derive(Debug, Clone, Default)]
enum Verdict {
    #[default]
    Pass,
    Shared(&'static Status),
    Owned(Box<Status>),
}

impl FilterResult {
    /// The node passes.
    pub const PASS: FilterResult = FilterResult(Verdict::Pass);

    /// A rejection with a status built once (it must not be a success; it should name the
    /// plugin that returns it, so that the framework's tagging leaves it shared).
    #[inline]
    pub const fn shared(s: &'static Status) -> FilterResult {
        FilterResult(Verdict::Shared(s))
    }

    #[inline]
    pub fn is_success(&self) -> bool {
        matches!(self.0, Verdict::Pass)
    }

    #[inline]
    pub fn code(&self) -> Code {
        self.status().map_or(Code::Success, |s| s.code)
    }

    /// The status (a fresh success status when the node passed).
    #[inline]
    pub fn into_status(self) -> Status {
        match self.0 {
            Verdict::Pass => Status::success(),
            Verdict::Shared(s) => s.clone(),
            Verdict::Owned(b) => *b,
        }
    }

    /// A rejection with its status rewritten by `f` (reusing the box); a pass stays a pass, and
    /// a shared rejection that `f` leaves as it is stays shared.
    pub fn map_rejection(self, f: impl FnOnce(Status) -> Status) -> FilterResult {
        FilterResult(match self.0 {
            Verdict::Pass => Verdict::Pass,
            Verdict::Shared(s) => {
                let t = f(s.clone());
                if t == *s {
                    Verdict::Shared(s)
                } else {
                    Verdict::Owned(Box::new(t))
                }
            }
            Verdict::Owned(mut b) => {
                *b = f(std::mem::take(&mut *b));
                Verdict::Owned(b)
            }
        })
    }

    /// A shared rejection already named by `plugin`: tagging it with `plugin` changes nothing,
    /// so the framework can pass it on without copying and comparing it.
    #[inline]
    pub fn is_shared_rejection_of(&self, plugin: &str) -> bool {
        // Named by the same constant as a rule: the address settles it without reading bytes.
        matches!(&self.0, Verdict::Shared(s) if s.is_rejected()
            && (std::ptr::eq(s.plugin, plugin) || s.plugin == plugin))
    }

    /// The rejection's status, `None` when the node passed.
    #[inline]
    pub fn status(&self) -> Option<&Status> {
        match &self.0 {
            Verdict::Pass => None,
            Verdict::Shared(s) => Some(s),
            Verdict::Owned(b) => Some(b),
        }
    }
}

/// Equal when both pass or both reject with equal statuses, shared or not.
impl PartialEq for FilterResult {
    fn eq(&self, other: &FilterResult) -> bool {
        self.status() == other.status()
    }
}

impl Eq for FilterResult {}

impl From<Status> for FilterResult {
    #[inline]
    fn from(s: Status) -> FilterResult {
        if s.is_success() {
            FilterResult::PASS
        } else {
            FilterResult(Verdict::Owned(Box::new(s)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_result_passes_only_on_success() {
        assert!(FilterResult::from(Status::success()).is_success());
        assert_eq!(FilterResult::PASS.code(), Code::Success);
        let r = FilterResult::from(Status::unschedulable("Insufficient cpu"));
        assert!(!r.is_success());
        assert_eq!(r.code(), Code::Unschedulable);
        // Skip and Error are not passes: the framework turns them into errors.
        assert!(!FilterResult::from(Status::skip()).is_success());
        assert_eq!(
            FilterResult::from(Status::error("boom"))
                .into_status()
                .message(),
            "boom"
        );
    }

    #[test]
    fn shared_rejections_read_as_owned_ones() {
        static CPU: Status = Status {
            code: Code::Unschedulable,
            reasons: Reasons::one(Cow::Borrowed("Insufficient cpu")),
            plugin: "NodeResourcesFit",
        };
        let owned = FilterResult::from(CPU.clone());
        let shared = FilterResult::shared(&CPU);
        assert_eq!(shared, owned);
        assert!(!shared.is_success());
        assert_eq!(shared.code(), Code::Unschedulable);
        assert_eq!(shared.clone().into_status(), CPU);
        assert!(shared.is_shared_rejection_of("NodeResourcesFit"));
        assert!(!shared.is_shared_rejection_of("Other"));
        assert!(!owned.is_shared_rejection_of("NodeResourcesFit"));
        // Tagging with the plugin it already names keeps it shared and equal.
        let tagged = shared.map_rejection(|s| s.with_plugin("NodeResourcesFit"));
        assert!(matches!(tagged.0, Verdict::Shared(_)));
        assert_eq!(tagged, owned);
        // Any other rewrite gives an owned status.
        let other = FilterResult::shared(&CPU).map_rejection(|s| s.with_plugin("Other"));
        assert!(matches!(other.0, Verdict::Owned(_)));
        assert_eq!(other.status().map(|s| s.plugin), Some("Other"));
        assert_ne!(other, owned);
        assert_ne!(FilterResult::PASS, owned);
    }

    #[test]
    fn a_fixed_rejection_is_the_one_the_framework_would_name() {
        static ANTI: Status = Status::fixed(Code::Unschedulable, "anti", "InterPodAffinity");
        let owned = Status::unschedulable("anti").with_plugin("InterPodAffinity");
        assert_eq!(ANTI, owned);
        let shared = FilterResult::shared(&ANTI);
        assert!(shared.is_shared_rejection_of("InterPodAffinity"));
        assert_eq!(shared, FilterResult::from(owned));
    }

    #[test]
    fn map_rejection_rewrites_rejections_and_keeps_passes() {
        let tag = |s: Status| s.with_plugin("NodeResourcesFit");
        assert!(FilterResult::PASS.map_rejection(tag).is_success());
        let r = FilterResult::from(Status::unresolvable("Too many pods")).map_rejection(tag);
        let s = r.status().expect("a rejection");
        assert_eq!(s.plugin, "NodeResourcesFit");
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), "Too many pods");
    }
}
