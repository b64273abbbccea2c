//! Every relative link in the README and the `docs/` pages resolves: the file (or folder)
//! exists, and a `#fragment` names a heading of the target page as GitHub slugs it. A page
//! moved or a heading renamed without its links fails here rather than in a reader's browser.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown pages whose links are checked: the README and everything under docs/.
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// GitHub's heading anchor: lower case, punctuation other than `-` and `_` dropped, spaces to
/// hyphens; a repeated heading gets `-1`, `-2`, ...
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

struct Page {
    links: Vec<String>,
    anchors: BTreeSet<String>,
}

fn parse(text: &str) -> Page {
    let mut links = Vec::new();
    let mut anchors = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => links.push(dest_url.to_string()),
            Event::Start(Tag::Heading { level, .. }) if level <= HeadingLevel::H6 => {
                heading = Some(String::new())
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(h) = heading.take() {
                    let base = slug(&h);
                    let mut candidate = base.clone();
                    let mut n = 1;
                    while anchors.contains(&candidate) {
                        candidate = format!("{base}-{n}");
                        n += 1;
                    }
                    anchors.insert(candidate);
                }
            }
            _ => {}
        }
    }
    Page { links, anchors }
}

#[test]
fn every_relative_link_in_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).expect("a readable page");
        let parsed = parse(&text);
        for link in &parsed.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a page has a folder").join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                if target.extension().is_some_and(|e| e == "md") {
                    let anchors = parse(&fs::read_to_string(&target).expect("readable")).anchors;
                    if !anchors.contains(fragment) {
                        broken.push(format!(
                            "{}: {link}: no heading with anchor #{fragment} in {}",
                            page.display(),
                            target.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 20,
        "only {checked} relative links found: is the parser reading the pages?"
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("Incident forensics: `ksim explain`"),
        "incident-forensics-ksim-explain"
    );
    assert_eq!(slug("What-if forks"), "what-if-forks");
    assert_eq!(
        slug("The scheduling queue, in virtual time"),
        "the-scheduling-queue-in-virtual-time"
    );
}

#[test]
fn a_missing_page_is_reported() {
    let page = parse("see [x](nowhere.md) and ![y](img.png)");
    assert_eq!(page.links, vec!["nowhere.md", "img.png"]);
}
