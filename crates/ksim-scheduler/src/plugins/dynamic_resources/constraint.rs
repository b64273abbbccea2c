//! `matchAttribute` constraints during the allocator's search (upstream
//! `structured/internal/incubating/constraint.go`, `matchAttributeConstraint`): the devices of
//! the named requests (all requests when none are named) must carry the attribute with one
//! value; a device without it never matches. `distinctAttribute` (DRAConsumableCapacity,
//! `distinctAttributeConstraint`): each must carry it with a value no other has (a value of
//! another type than an earlier one is accepted, as upstream's `matchesAttribute`).

use std::collections::BTreeSet;

use ksim_api::resource::DeviceAttribute;

/// A constraint as the claim states it.
pub(super) struct ConstraintSpec {
    pub(super) requests: BTreeSet<String>,
    pub(super) attribute: String,
    /// `distinctAttribute` rather than `matchAttribute`.
    pub(super) distinct: bool,
}

/// A `matchAttribute` constraint's state during one search.
#[derive(Default)]
pub(super) struct MatchState {
    value: Option<DeviceAttribute>,
    count: usize,
    /// `distinctAttribute`: the values taken, in order.
    taken: Vec<DeviceAttribute>,
}

fn applies(spec: &ConstraintSpec, request: &str, sub: Option<&str>) -> bool {
    if spec.requests.is_empty() {
        return true;
    }
    match sub {
        None => spec.requests.contains(request),
        Some(s) => {
            spec.requests.contains(request) || spec.requests.contains(&format!("{request}/{s}"))
        }
    }
}

/// `lookupAttribute`: the fully qualified name, or the bare name when the domain is the driver.
fn lookup_attribute<'d>(
    d: &'d ksim_api::resource::Device,
    driver: &str,
    qualified: &str,
) -> Option<&'d DeviceAttribute> {
    if let Some(a) = d.attributes.get(qualified) {
        return Some(a);
    }
    let (domain, id) = qualified.split_once('/')?;
    if domain != driver {
        return None;
    }
    d.attributes.get(id)
}

/// `matchAttributeConstraint.add`.
pub(super) fn constraint_add(
    spec: &ConstraintSpec,
    st: &mut MatchState,
    request: &str,
    sub: Option<&str>,
    driver: &str,
    d: &ksim_api::resource::Device,
) -> bool {
    if !applies(spec, request, sub) {
        return true;
    }
    let Some(attr) = lookup_attribute(d, driver, &spec.attribute) else {
        return false;
    };
    if spec.distinct {
        if !distinct_from(&st.taken, attr) {
            return false;
        }
        st.taken.push(attr.clone());
        return true;
    }
    if st.count == 0 {
        st.value = Some(attr.clone());
        st.count = 1;
        return true;
    }
    let Some(v) = &st.value else {
        return false;
    };
    let same = match (&attr.string, &attr.int, &attr.bool, &attr.version) {
        (Some(s), _, _, _) => v.string.as_ref() == Some(s),
        (_, Some(i), _, _) => v.int.as_ref() == Some(i),
        (_, _, Some(b), _) => v.bool.as_ref() == Some(b),
        (_, _, _, Some(x)) => v.version.as_ref() == Some(x),
        _ => false,
    };
    if same {
        st.count += 1;
    }
    same
}

pub(super) fn constraint_remove(
    spec: &ConstraintSpec,
    st: &mut MatchState,
    request: &str,
    sub: Option<&str>,
) {
    if applies(spec, request, sub) {
        st.count = st.count.saturating_sub(1);
        if spec.distinct {
            st.taken.pop();
        }
    }
}

/// `distinctAttributeConstraint.matchesAttribute`: walking the values taken in order, the
/// first of another type accepts, an equal one refuses.
fn distinct_from(taken: &[DeviceAttribute], a: &DeviceAttribute) -> bool {
    for t in taken {
        // `Some(true)`: distinct, `Some(false)`: duplicated, `None`: another type.
        let distinct = match t {
            DeviceAttribute {
                string: Some(x), ..
            } => a.string.as_ref().map(|y| x != y),
            DeviceAttribute { int: Some(x), .. } => a.int.map(|y| *x != y),
            DeviceAttribute { bool: Some(x), .. } => a.bool.map(|y| *x != y),
            DeviceAttribute {
                version: Some(x), ..
            } => a.version.as_ref().map(|y| x != y),
            _ => return false,
        };
        match distinct {
            None => return true,
            Some(false) => return false,
            Some(true) => {}
        }
    }
    true
}
