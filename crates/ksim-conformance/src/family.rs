//! Which family a case file belongs to, from its place on disk: the first directory under the
//! suite's root when the file is in one (`cases/<family>/...`), else the file name up to its
//! first `-` (`fit-003.json` → `fit`). The recorded `family` field agrees with this for every
//! case (a workspace test checks it).
//!
//! Plain `std`: the build script includes this file too, to generate one test per family.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Every `*.json` file under `dir` (recursively), sorted by path.
pub fn json_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The family of the case file `path` under the suite root `root`.
pub fn family_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut parts = rel.components();
    let first = parts.next();
    if parts.next().is_some() {
        if let Some(c) = first {
            return c.as_os_str().to_string_lossy().into_owned();
        }
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.split_once('-') {
        Some((f, _)) => f.to_string(),
        None => stem,
    }
}

/// The case files under `root`, by family.
pub fn families(root: &Path) -> io::Result<BTreeMap<String, Vec<PathBuf>>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for p in json_files(root)? {
        out.entry(family_of(root, &p)).or_default().push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_come_from_directories_and_name_prefixes() {
        let root = std::env::temp_dir().join(format!("ksim-family-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sub = root.join("newfam").join("deeper");
        std::fs::create_dir_all(&sub).expect("temp dir");
        for p in [
            root.join("fit-001.json"),
            root.join("fit-002.json"),
            root.join("spreaddefault-001.json"),
            root.join("spread-001.json"),
            root.join("notes.txt"),
            root.join("newfam").join("case-a.json"),
            sub.join("case-b.json"),
        ] {
            std::fs::write(&p, "{}").expect("write");
        }
        let fams = families(&root).expect("families");
        let got: Vec<(&str, usize)> = fams.iter().map(|(f, v)| (f.as_str(), v.len())).collect();
        assert_eq!(
            got,
            [
                ("fit", 2),
                ("newfam", 2),
                ("spread", 1),
                ("spreaddefault", 1)
            ]
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
