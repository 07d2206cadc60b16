//! `[[view]]`: a named part of the federated catalog, served at
//! `/mcp/<name>` and by `sluice serve --stdio --view <name>`.
//!
//! ```toml
//! [[view]]
//! name = "research"
//! include = ["time__*", "everything__echo", "demo://resource/static/*"]
//! exclude = ["*__delete*"]
//! rename = { "time__get_current_time" = "now" }
//! descriptions = { "everything__echo" = "Repeat a message back." }
//! ```
//!
//! `include` and `exclude` are globs (`*` any run, `?` one character) over
//! exposed names: namespaced tool and prompt names, resource URIs and
//! template URI templates. An entry is in the view when some `include`
//! matches it (no `include`: everything) and no `exclude` does. `rename`
//! and `descriptions` are keyed by exposed name and change only what the
//! view's clients see (see [`crate::catalog::view`], which applies it).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::diagnostics::Diagnostics;
use crate::catalog::poisoning::valid_name;
use crate::catalog::view::View;

/// One `[[view]]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawView {
    name: Spanned<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    rename: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    descriptions: BTreeMap<String, String>,
}

/// The longest view name.
const MAX_VIEW_NAME: usize = 64;

pub(super) fn validate_views(raw: &[RawView], diags: &mut Diagnostics<'_>) -> Vec<View> {
    let mut out: Vec<View> = Vec::new();
    for (i, view) in raw.iter().enumerate() {
        let key = format!("view[{i}].name");
        let name = view.name.get_ref();
        let well_formed = !name.is_empty()
            && name.len() <= MAX_VIEW_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !well_formed {
            diags.push(
                Some(view.name.span()),
                &key,
                format!("{name:?} is not a view name: 1 to {MAX_VIEW_NAME} characters of a-z, 0-9, _ and -"),
            );
            continue;
        }
        if out.iter().any(|v| &v.name == name) {
            diags.push(
                Some(view.name.span()),
                &key,
                format!("view {name:?} is defined twice"),
            );
            continue;
        }
        let mut shown: Vec<&str> = Vec::new();
        let mut ok = true;
        for (from, to) in &view.rename {
            let problem = if !valid_name(to.get_ref()) {
                Some(format!(
                    "{:?} is not a tool or prompt name: 1 to 128 characters of A-Z a-z 0-9 _ - .",
                    to.get_ref()
                ))
            } else if shown.contains(&to.get_ref().as_str()) {
                Some(format!("two entries are renamed {:?}", to.get_ref()))
            } else {
                None
            };
            if let Some(message) = problem {
                diags.push(
                    Some(to.span()),
                    &format!("view[{i}].rename.{from}"),
                    message,
                );
                ok = false;
            }
            shown.push(to.get_ref());
        }
        if ok {
            out.push(View {
                name: name.clone(),
                include: view.include.clone(),
                exclude: view.exclude.clone(),
                rename: view
                    .rename
                    .iter()
                    .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                    .collect(),
                descriptions: view.descriptions.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{errors, parse};

    const UPSTREAM: &str = "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n";

    #[test]
    fn a_view_reads_with_its_globs_renames_and_descriptions() {
        let text = format!(
            "{UPSTREAM}[[view]]\nname = \"research\"\ninclude = [\"a__*\"]\nexclude = [\"a__rm\"]\nrename = {{ \"a__ls\" = \"list\" }}\ndescriptions = {{ \"a__ls\" = \"Lists.\" }}\n"
        );
        let config = parse(&text).expect("valid");
        let view = &config.views[0];
        assert_eq!(view.name, "research");
        assert_eq!(
            (view.include.as_slice(), view.exclude.as_slice()),
            (&["a__*".to_owned()][..], &["a__rm".to_owned()][..])
        );
        assert_eq!(view.rename["a__ls"], "list");
        assert_eq!(view.descriptions["a__ls"], "Lists.");
        assert!(parse(UPSTREAM).expect("valid").views.is_empty());
    }

    #[test]
    fn bad_views_say_where_and_why() {
        let text = format!(
            "{UPSTREAM}[[view]]\nname = \"Bad Name\"\n\n[[view]]\nname = \"v\"\n\n[[view]]\nname = \"v\"\n\n[[view]]\nname = \"w\"\nrename = {{ \"a__x\" = \"has space\", \"a__y\" = \"same\", \"a__z\" = \"same\" }}\n"
        );
        let e = errors(&text);
        assert_eq!(e.len(), 4, "{e:#?}");
        assert!(
            e[0].starts_with("sluice.toml:5:8: view[0].name: \"Bad Name\" is not a view name"),
            "{}",
            e[0]
        );
        assert!(
            e[1].contains("view[2].name: view \"v\" is defined twice"),
            "{}",
            e[1]
        );
        assert!(
            e[2].contains("view[3].rename.a__x: \"has space\" is not a tool or prompt name"),
            "{}",
            e[2]
        );
        assert!(
            e[3].contains("view[3].rename.a__z: two entries are renamed \"same\""),
            "{}",
            e[3]
        );
        let unknown = errors(&format!(
            "{UPSTREAM}[[view]]\nname = \"v\"\nincludes = []\n"
        ));
        assert_eq!(
            unknown,
            [
                "sluice.toml:6:1: view[0].includes: unknown key; did you mean `include`? (allowed: name, include, exclude, rename, descriptions)"
            ]
        );
    }
}
