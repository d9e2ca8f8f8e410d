//! Builds the MCP App file card's one page (`OUT_DIR/file_card.html`) from its template and
//! its script, `card/file-card.js`, with the web UI's modules that script imports inlined: a
//! size or a file's kind is then written once, in the web UI, and read the same in the card.
//!
//! The page must be self-contained (hosts run it in a sandbox that loads nothing), so each
//! module becomes a function scope whose exports the importing code destructures; `import` and
//! `export` are all these modules use of the module syntax (one-line `import { … } from
//! './x.js'` and `export function`), and anything else is refused here rather than shipped
//! broken. `web-types/check` type-checks the same sources.

use std::fmt::Write as _;
use std::path::Path;

/// The web UI's modules the card may import, in an order where each comes after those it
/// imports.
const MODULES: [&str; 3] = ["dom.js", "format.js", "icons.js"];
const WEB_ASSETS: &str = "../../web/assets";
const CARD_SCRIPT: &str = "card/file-card.js";
const TEMPLATE: &str = "card/file-card.html";
const MARKER: &str = "<script>\n/* the card's script */\n</script>";

fn main() {
    let mut script = String::from("(() => {\n'use strict';\n");
    for module in MODULES {
        let path = format!("{WEB_ASSETS}/{module}");
        let (body, exports) = scope_of(&path);
        writeln!(
            script,
            "const {} = (() => {{\n{body}\nreturn {{ {} }};\n}})();",
            binding(&path, module),
            exports.join(", ")
        )
        .expect("writing to a String");
    }
    let (body, exports) = scope_of(CARD_SCRIPT);
    assert!(
        exports.is_empty(),
        "{CARD_SCRIPT} exports nothing: it is the page's script"
    );
    script.push_str(&body);
    script.push_str("})();\n");
    assert!(
        !script.to_ascii_lowercase().contains("</script"),
        "the card's script holds </script>, which would end it early"
    );

    let template = read(TEMPLATE);
    assert!(template.contains(MARKER), "{TEMPLATE} has no {MARKER:?}");
    let page = template.replace(MARKER, &format!("<script>\n{script}</script>"));
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("file_card.html");
    std::fs::write(&out, page).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    println!("cargo:rerun-if-changed={TEMPLATE}");
    println!("cargo:rerun-if-changed={CARD_SCRIPT}");
    for module in MODULES {
        println!("cargo:rerun-if-changed={WEB_ASSETS}/{module}");
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The name a module's exports are kept under in the page.
fn binding(path: &str, module: &str) -> String {
    let stem = module.trim_end_matches(".js").replace('-', "_");
    assert!(
        stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "{path}: a module name the page cannot bind"
    );
    format!("module_{stem}")
}

/// A module's code with its imports bound to the modules already in the page and its
/// `export` keywords dropped, and the names it exports.
fn scope_of(path: &str) -> (String, Vec<String>) {
    let source = read(path);
    let mut body = String::with_capacity(source.len());
    let mut exports = Vec::new();
    for line in source.lines() {
        if let Some(import) = line.strip_prefix("import ") {
            body.push_str(&bound_import(path, import));
        } else if let Some(exported) = line.strip_prefix("export ") {
            let name = exported
                .strip_prefix("function ")
                .or_else(|| exported.strip_prefix("async function "))
                .and_then(|rest| rest.split(['(', ' ']).next())
                .unwrap_or_else(|| panic!("{path}: only `export function` is inlined: {line}"));
            exports.push(name.to_owned());
            body.push_str(exported);
        } else {
            body.push_str(line);
        }
        body.push('\n');
    }
    (body, exports)
}

/// `{ a, b } from './dom.js';` as `const { a, b } = module_dom;`, for a module of [`MODULES`].
fn bound_import(path: &str, import: &str) -> String {
    let (names, from) = import
        .split_once(" from ")
        .unwrap_or_else(|| panic!("{path}: an import the page cannot inline: {import}"));
    let from = from.trim().trim_end_matches(';').trim_matches(['\'', '"']);
    let module = from.rsplit('/').next().unwrap_or(from);
    assert!(
        MODULES.contains(&module) && names.trim().starts_with('{'),
        "{path}: imports {from}, which the card's page does not inline (add it to MODULES)"
    );
    format!("const {} = {};", names.trim(), binding(path, module))
}
