//! A view: the part of the federated catalog one `[[view]]` shows, as a
//! [`Federation`] of its own, so that every list, route, completion and
//! progressive-discovery answer made over it sees only the view.
//!
//! - An entry is in the view when an `include` glob matches its exposed
//!   name (tools, prompts) or its URI (resources) or URI template
//!   (templates), or there is no `include`, and no `exclude` glob does.
//! - `rename` changes the name a tool or prompt is listed and called by;
//!   the route still goes to the upstream's own name. `descriptions`
//!   replaces the description listed. Neither changes what is approved:
//!   the drift verdict is made on the upstream's definition before the
//!   view is built.
//! - An entry outside the view has no route in it, and is not remembered
//!   as withheld either: a call to it is answered as unknown, whether it
//!   exists, drifted or not (no existence leak).
//! - A read of a URI that no listed resource names goes, as in the whole
//!   catalog, to the first template of the view that matches it.
//! - A client hears `list_changed` for what it is shown: [`list_changes`]
//!   compares one catalog (the whole federation, or one view's) before and
//!   after a change, [`view_list_changes`] every view's.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::Federation;
use crate::method::ListKind;

/// One `[[view]]`: which entries it shows, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// `name`: `[a-z0-9_-]`, 1 to 64 characters, unique; the path segment
    /// of `/mcp/<name>`.
    pub name: String,
    /// `include`: globs of the exposed names shown (empty: all).
    pub include: Vec<String>,
    /// `exclude`: globs of the exposed names hidden.
    pub exclude: Vec<String>,
    /// `rename`: exposed tool or prompt name -> the name this view shows.
    pub rename: BTreeMap<String, String>,
    /// `descriptions`: exposed name -> the description this view shows.
    pub descriptions: BTreeMap<String, String>,
}

// === impl Federation ===

impl Federation {
    /// The part of this federation `view` shows.
    pub fn view(&self, view: &View) -> Federation {
        let shows = |key: &str| shown(view, key);
        let mut out = Federation::default();
        for (kind, routes) in [
            (ListKind::Tools, &self.tool_routes),
            (ListKind::Prompts, &self.prompt_routes),
        ] {
            for entry in self.lists.list(kind) {
                let Some(exposed) = entry.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let Some(route) = routes.get(exposed).filter(|_| shows(exposed)) else {
                    continue;
                };
                let name = view.rename.get(exposed).map_or(exposed, String::as_str);
                let (view_routes, list) = match kind {
                    ListKind::Prompts => (&mut out.prompt_routes, &mut out.lists.prompts),
                    _ => (&mut out.tool_routes, &mut out.lists.tools),
                };
                // A rename onto a name the view already shows loses to it.
                if view_routes.contains_key(name) {
                    continue;
                }
                let mut shown_entry = entry.clone();
                if let Some(obj) = shown_entry.as_object_mut() {
                    obj.insert("name".into(), name.into());
                    if let Some(description) = view.descriptions.get(exposed) {
                        obj.insert("description".into(), description.clone().into());
                    }
                }
                if kind == ListKind::Tools {
                    out.tool_index.insert(name.to_owned(), list.len());
                }
                list.push(shown_entry);
                view_routes.insert(name.to_owned(), route.clone());
            }
        }
        for entry in &self.lists.resources {
            let Some(uri) = entry.get("uri").and_then(Value::as_str) else {
                continue;
            };
            if let Some(owner) = self.resource_owners.get(uri).filter(|_| shows(uri)) {
                out.resource_owners.insert(uri.to_owned(), owner.clone());
                out.lists.resources.push(described(view, uri, entry));
            }
        }
        for ((template, owner), entry) in self.templates.iter().zip(&self.lists.resource_templates)
        {
            if shows(&template.source) {
                out.templates.push((template.clone(), owner.clone()));
                out.lists
                    .resource_templates
                    .push(described(view, &template.source, entry));
            }
        }
        for ((kind, key), route) in &self.withheld {
            if shows(key) {
                out.withheld.insert((*kind, key.clone()), route.clone());
            }
        }
        out.withheld_templates = self
            .withheld_templates
            .iter()
            .filter(|(t, _)| shows(&t.source))
            .cloned()
            .collect();
        out
    }
}

/// The `list_changed` notifications the clients of one catalog (the whole
/// federation, or one view's) must hear when it goes from `before` to
/// `after`: one for each list whose entries differ (templates count as
/// resources, MCP having no notification of their own), in
/// [`ListKind::ALL`] order. None when what they see is the same, whatever
/// changed outside it.
pub fn list_changes(before: &Federation, after: &Federation) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for kind in ListKind::ALL {
        let method = kind.list_changed();
        if before.list(kind) != after.list(kind) && !out.contains(&method) {
            out.push(method);
        }
    }
    out
}

/// For each view configured before or after a change (by name, each once,
/// in name order), the notifications its clients must hear
/// ([`list_changes`]); views whose lists did not change are left out. A
/// view no longer configured shows nothing now; a new one showed nothing
/// before.
pub fn view_list_changes<'a, F: Borrow<Federation>>(
    before: &'a BTreeMap<String, F>,
    after: &'a BTreeMap<String, F>,
) -> Vec<(&'a str, Vec<&'static str>)> {
    let empty = Federation::default();
    let mut names: Vec<&'a str> = before
        .keys()
        .chain(after.keys())
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let of = |views: &'a BTreeMap<String, F>| views.get(name).map(Borrow::borrow);
            let changes = list_changes(of(before).unwrap_or(&empty), of(after).unwrap_or(&empty));
            (!changes.is_empty()).then_some((name, changes))
        })
        .collect()
}

/// Whether `view` shows the entry whose exposed name or URI is `key`.
pub fn shown(view: &View, key: &str) -> bool {
    let included = view.include.is_empty() || view.include.iter().any(|g| glob(g, key));
    included && !view.exclude.iter().any(|g| glob(g, key))
}

/// `entry` with the view's description for `key`, if it has one.
fn described(view: &View, key: &str, entry: &Value) -> Value {
    let mut out = entry.clone();
    if let (Some(description), Some(obj)) = (view.descriptions.get(key), out.as_object_mut()) {
        obj.insert("description".into(), description.clone().into());
    }
    out
}

/// Whether `text` matches `pattern`: `*` any run of characters, `?` one
/// character, anything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic linear two-pointer match, backtracking only to the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::UpstreamCatalog;
    use crate::catalog::drift::{DriftKind, EntryId, Withheld};
    use crate::naming::Naming;
    use serde_json::json;

    fn federation() -> Federation {
        federation_and(None)
    }

    /// [`federation`] with one more upstream, `more`, last.
    fn federation_and(more: Option<&UpstreamCatalog>) -> Federation {
        let time = UpstreamCatalog {
            tools: vec![
                json!({"name": "get_current_time", "description": "Now."}),
                json!({"name": "convert_time", "description": "Convert."}),
            ],
            ..UpstreamCatalog::default()
        };
        let everything = UpstreamCatalog {
            tools: vec![
                json!({"name": "echo", "description": "Echo."}),
                json!({"name": "delete_all"}),
            ],
            prompts: vec![json!({"name": "simple_prompt"})],
            resources: vec![
                json!({"uri": "demo://resource/static/1", "name": "one"}),
                json!({"uri": "demo://private/2", "name": "two"}),
            ],
            resource_templates: vec![
                json!({"uriTemplate": "demo://resource/dynamic/{id}", "name": "dyn"}),
            ],
        };
        let naming = Naming::new("__", vec![]);
        let mut upstreams = vec![("time", &time), ("everything", &everything)];
        upstreams.extend(more.map(|m| ("more", m)));
        let mut fed = Federation::build(upstreams, &naming);
        fed.withhold(
            "everything",
            &naming,
            &[Withheld {
                entry: EntryId {
                    kind: ListKind::Tools,
                    key: "drifted".into(),
                },
                drift: DriftKind::Changed,
            }],
        );
        fed
    }

    fn view(include: &[&str], exclude: &[&str]) -> View {
        View {
            name: "v".into(),
            include: include.iter().map(|s| (*s).to_owned()).collect(),
            exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
            rename: BTreeMap::new(),
            descriptions: BTreeMap::new(),
        }
    }

    fn names(fed: &Federation, kind: ListKind, key: &str) -> Vec<String> {
        fed.list(kind)
            .iter()
            .filter_map(|e| e[key].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn globs() {
        assert!(glob("time__*", "time__get_current_time"));
        assert!(glob("*", ""));
        assert!(glob("a?c", "abc") && !glob("a?c", "ac"));
        assert!(glob("*__delete*", "everything__delete_all"));
        assert!(!glob("time__*", "everything__echo"));
        assert!(glob("demo://resource/*", "demo://resource/static/1"));
        assert!(glob("*a*b*c", "xaxbxbxc") && !glob("*a*b*c", "xaxbxbx"));
    }

    #[test]
    fn a_view_shows_exactly_its_entries_and_routes_only_them() {
        let fed = federation();
        let v = view(
            &["time__*", "everything__*", "demo://resource/*"],
            &["*__delete*", "time__convert_time"],
        );
        let seen = fed.view(&v);
        assert_eq!(
            names(&seen, ListKind::Tools, "name"),
            ["time__get_current_time", "everything__echo"]
        );
        assert_eq!(
            names(&seen, ListKind::Prompts, "name"),
            ["everything__simple_prompt"]
        );
        assert_eq!(
            names(&seen, ListKind::Resources, "uri"),
            ["demo://resource/static/1"]
        );
        assert_eq!(
            names(&seen, ListKind::ResourceTemplates, "uriTemplate"),
            ["demo://resource/dynamic/{id}"]
        );
        assert!(seen.route_tool("time__convert_time").is_none());
        assert!(seen.route_tool("everything__delete_all").is_none());
        assert_eq!(seen.route_resource("demo://private/2"), None);
        assert_eq!(
            seen.route_resource("demo://resource/dynamic/7"),
            Some("everything")
        );
        // The withheld entry is in the view: still refused as drift.
        assert!(
            seen.withheld(ListKind::Tools, "everything__drifted")
                .is_some()
        );
        let narrow = fed.view(&view(&["time__*"], &[]));
        assert!(
            narrow
                .withheld(ListKind::Tools, "everything__drifted")
                .is_none()
        );
        assert!(narrow.list(ListKind::Resources).is_empty());
        // No include: everything but the excluded.
        assert_eq!(
            fed.view(&view(&[], &["everything__*"]))
                .list(ListKind::Tools)
                .len(),
            2
        );
    }

    /// [`federation`] and an upstream with one tool and one template.
    fn federation_with_more() -> Federation {
        federation_and(Some(&UpstreamCatalog {
            tools: vec![json!({"name": "added_0"})],
            resource_templates: vec![json!({"uriTemplate": "other://{x}", "name": "o"})],
            ..UpstreamCatalog::default()
        }))
    }

    #[test]
    fn a_catalog_hears_list_changed_only_for_the_lists_that_changed_in_it() {
        let (before, after) = (federation(), federation_with_more());
        assert_eq!(
            list_changes(&before, &after),
            [
                "notifications/tools/list_changed",
                "notifications/resources/list_changed"
            ]
        );
        assert!(list_changes(&before, &federation()).is_empty());
        // A view that shows neither addition hears nothing; one that shows
        // the tool hears of tools only.
        let time = view(&["time__*"], &[]);
        assert!(list_changes(&before.view(&time), &after.view(&time)).is_empty());
        let added = view(&["more__*"], &[]);
        assert_eq!(
            list_changes(&before.view(&added), &after.view(&added)),
            ["notifications/tools/list_changed"]
        );
        // A description override is part of what the view shows.
        let mut described = time.clone();
        described
            .descriptions
            .insert("time__get_current_time".into(), "Then.".into());
        assert_eq!(
            list_changes(&before.view(&time), &before.view(&described)),
            ["notifications/tools/list_changed"]
        );
    }

    #[test]
    fn each_view_hears_of_its_own_changes_and_of_appearing_or_going() {
        let (before, after) = (federation(), federation_with_more());
        let views = |fed: &Federation, configured: &[(&str, View)]| {
            configured
                .iter()
                .map(|(name, v)| ((*name).to_owned(), fed.view(v)))
                .collect::<BTreeMap<String, Federation>>()
        };
        let old = views(
            &before,
            &[
                ("time", view(&["time__*"], &[])),
                ("added", view(&["more__*", "everything__echo"], &[])),
                ("gone", view(&["time__*"], &[])),
            ],
        );
        let new = views(
            &after,
            &[
                ("time", view(&["time__*"], &[])),
                ("added", view(&["more__*", "everything__echo"], &[])),
                ("fresh", view(&["everything__*"], &[])),
                ("empty", view(&["nothing__*"], &[])),
            ],
        );
        assert_eq!(
            view_list_changes(&old, &new),
            [
                ("added", vec!["notifications/tools/list_changed"]),
                (
                    "fresh",
                    vec![
                        "notifications/tools/list_changed",
                        "notifications/prompts/list_changed"
                    ]
                ),
                ("gone", vec!["notifications/tools/list_changed"]),
            ]
        );
        assert!(view_list_changes(&old, &old).is_empty());
    }

    #[test]
    fn renames_and_descriptions_change_what_the_view_shows_not_the_route() {
        let fed = federation();
        let mut v = view(&["time__get_current_time", "everything__echo"], &[]);
        v.rename
            .insert("time__get_current_time".into(), "now".into());
        v.rename.insert("everything__echo".into(), "now".into());
        v.descriptions
            .insert("time__get_current_time".into(), "What time is it.".into());
        let seen = fed.view(&v);
        assert_eq!(
            seen.list(ListKind::Tools),
            [json!({"name": "now", "description": "What time is it."})]
        );
        let route = seen.route_tool("now").expect("routed");
        assert_eq!(
            (route.upstream.as_str(), route.name.as_str()),
            ("time", "get_current_time")
        );
        assert!(seen.route_tool("time__get_current_time").is_none());
        assert_eq!(seen.tool("now"), Some(&seen.list(ListKind::Tools)[0]));
        // The whole catalog is unchanged.
        assert_eq!(
            fed.tool("time__get_current_time").expect("listed")["description"],
            "Now."
        );
    }
}
