//! Form XObjects drawn inside themselves, or nested without end in sight.
//!
//! A page's content draws a form with `Do`, and a form's content may draw forms too. A form
//! that draws itself, directly or through others, sends a reader round for ever, and a chain
//! of thousands of forms each drawing the next is as deep: pdf-extract follows each `Do` by a
//! recursive call, so either would overflow its stack and end the extraction worker. Before
//! the text is read, each such `Do` is taken out of the form that makes it: the drawing
//! stops where it would repeat itself or pass [`MAX_FORM_DEPTH`] forms, and what the form
//! drew before that is kept. hayro, which draws the pages, has a nesting limit of its own.
//!
//! A form without `/Resources` names the forms it draws in the resources of whoever draws it,
//! so the same form is followed once per place it is drawn from (each such place is the
//! resources of a page or of a form that has its own, so the walk stays bounded).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pdf_extract::content::Content;
use pdf_extract::{Dictionary, Document, Object, ObjectId};

/// The deepest a form is drawn: a page's form is at depth 1.
pub(crate) const MAX_FORM_DEPTH: usize = 24;

/// Takes out of each form the `Do` operations that would draw a form inside itself or deeper
/// than [`MAX_FORM_DEPTH`].
pub(crate) fn cut_endless_forms(doc: &mut Document) {
    let mut walk = Walk::default();
    let pages: Vec<ObjectId> = doc.get_pages().into_values().collect();
    for page in pages {
        let resources = crate::pdf_predefined_cmaps::effective_resources(doc, page);
        let Ok(content) = doc.get_and_decode_page_content(page) else {
            continue;
        };
        let drawn = drawn_names(&content);
        walk.draw(doc, &drawn, &resources, Place::Page(page), None);
    }
    for (form, names) in walk.cut {
        remove_draws(doc, form, &names);
    }
}

/// Where the names a form draws are looked up: a page's resources, or a form's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Place {
    Page(ObjectId),
    Form(ObjectId),
}

#[derive(Debug, Default)]
struct Walk {
    /// The forms on the way from the page to where the walk is now.
    path: Vec<ObjectId>,
    /// Each form already walked from a place, with how many forms deep it draws (itself
    /// included), so a form drawn many times is walked once per place.
    height: HashMap<(ObjectId, Place), usize>,
    /// The names whose `Do` is taken out of each form.
    cut: BTreeMap<ObjectId, BTreeSet<Vec<u8>>>,
}

impl Walk {
    /// Walks the forms that `names` draw, looked up in `resources` (which belong to `place`),
    /// from the form `owner` (`None`: a page). Answers how many forms deep they draw.
    fn draw(
        &mut self,
        doc: &Document,
        names: &BTreeSet<Vec<u8>>,
        resources: &Dictionary,
        place: Place,
        owner: Option<ObjectId>,
    ) -> usize {
        let mut deepest = 0;
        for name in names {
            let Some(form) = form_named(doc, resources, name) else {
                continue;
            };
            let own = own_resources(doc, form);
            let child_place = if own.is_some() {
                Place::Form(form)
            } else {
                place
            };
            let height = if self.path.contains(&form) {
                None
            } else if let Some(&height) = self.height.get(&(form, child_place)) {
                Some(height)
            } else {
                Some(self.walk_form(doc, form, own.unwrap_or(resources), child_place))
            };
            match (height, owner) {
                (Some(height), _) if self.path.len() + height <= MAX_FORM_DEPTH => {
                    deepest = deepest.max(height);
                }
                // A page's own `Do` is never taken out: the forms below it were cut already.
                (Some(height), None) => deepest = deepest.max(height),
                (_, Some(owner)) => {
                    self.cut.entry(owner).or_default().insert(name.clone());
                }
                (None, None) => {}
            }
        }
        deepest
    }

    /// Walks one form drawn from `place`: how many forms deep it draws, itself included.
    fn walk_form(
        &mut self,
        doc: &Document,
        form: ObjectId,
        resources: &Dictionary,
        place: Place,
    ) -> usize {
        let names = form_content(doc, form)
            .map(|content| drawn_names(&content))
            .unwrap_or_default();
        self.path.push(form);
        let below = if self.path.len() < MAX_FORM_DEPTH {
            self.draw(doc, &names, resources, place, Some(form))
        } else {
            // At the deepest a form is drawn, it draws no form.
            for name in names
                .iter()
                .filter(|n| form_named(doc, resources, n).is_some())
            {
                self.cut.entry(form).or_default().insert(name.clone());
            }
            0
        };
        self.path.pop();
        let height = below + 1;
        self.height.insert((form, place), height);
        height
    }
}

/// The names `content` draws with `Do`.
fn drawn_names(content: &Content) -> BTreeSet<Vec<u8>> {
    content
        .operations
        .iter()
        .filter(|op| op.operator == "Do")
        .filter_map(|op| op.operands.first()?.as_name().ok())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The form XObject `name` stands for in `resources`, when it is one (by reference).
fn form_named(doc: &Document, resources: &Dictionary, name: &[u8]) -> Option<ObjectId> {
    let xobjects = resolved_dictionary(doc, resources.get(b"XObject").ok()?)?;
    let id = xobjects.get(name).ok()?.as_reference().ok()?;
    let stream = doc.get_object(id).ok()?.as_stream().ok()?;
    let subtype = stream.dict.get(b"Subtype").ok()?.as_name().ok()?;
    (subtype == b"Form").then_some(id)
}

/// A form's own `/Resources`, written in place or by reference.
fn own_resources(doc: &Document, form: ObjectId) -> Option<&Dictionary> {
    let stream = doc.get_object(form).ok()?.as_stream().ok()?;
    resolved_dictionary(doc, stream.dict.get(b"Resources").ok()?)
}

fn resolved_dictionary<'a>(doc: &'a Document, value: &'a Object) -> Option<&'a Dictionary> {
    match value {
        Object::Reference(id) => doc.get_dictionary(*id).ok(),
        Object::Dictionary(dictionary) => Some(dictionary),
        _ => None,
    }
}

fn form_content(doc: &Document, form: ObjectId) -> Option<Content> {
    let stream = doc.get_object(form).ok()?.as_stream().ok()?;
    Content::decode(&stream.get_plain_content().ok()?).ok()
}

/// Writes `form`'s content again without its `Do` of `names`.
fn remove_draws(doc: &mut Document, form: ObjectId, names: &BTreeSet<Vec<u8>>) {
    let Some(mut content) = form_content(doc, form) else {
        return;
    };
    content.operations.retain(|op| {
        op.operator != "Do"
            || !op
                .operands
                .first()
                .and_then(|name| name.as_name().ok())
                .is_some_and(|name| names.contains(name))
    });
    let Ok(bytes) = content.encode() else {
        return;
    };
    if let Ok(stream) = doc.get_object_mut(form).and_then(Object::as_stream_mut) {
        stream.set_plain_content(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELVETICA: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

    /// A one-page PDF whose page draws form 5; `forms` are the objects from 5 on, each a form
    /// XObject drawing the names given (`/Fn` names object n).
    fn pdf(forms: &[&[u32]], own_resources: bool) -> Vec<u8> {
        let mut objects = vec![
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Contents 4 0 R \
             /Resources << /Font << /H {HELVETICA} >> /XObject << /F5 5 0 R >> >> >>"
                .replace("{HELVETICA}", HELVETICA),
            "<< /Length 6 >>\nstream\n/F5 Do\nendstream".to_owned(),
        ];
        for draws in forms {
            let content: String = draws.iter().map(|n| format!("/F{n} Do\n")).collect();
            let content = format!("BT /H 12 Tf (x) Tj ET\n{content}");
            let names: String = draws.iter().map(|n| format!("/F{n} {n} 0 R ")).collect();
            let resources = if own_resources {
                format!("/Resources << /Font << /H {HELVETICA} >> /XObject << {names}>> >> ")
            } else {
                String::new()
            };
            objects.push(format!(
                "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] {resources}/Length {} >>\nstream\n{content}\nendstream",
                content.len()
            ));
        }
        let bodies: Vec<&[u8]> = objects.iter().map(|body| body.as_bytes()).collect();
        ferry_test_support::documents::pdf_from_objects(&bodies)
    }

    fn draws(doc: &Document, form: u32) -> BTreeSet<Vec<u8>> {
        drawn_names(&form_content(doc, (form, 0)).unwrap())
    }

    fn cut(bytes: &[u8]) -> Document {
        let mut doc = Document::load_mem(bytes).unwrap();
        cut_endless_forms(&mut doc);
        doc
    }

    #[test]
    fn a_form_that_draws_itself_stops_drawing_itself() {
        let doc = cut(&pdf(&[&[5]], true));
        assert!(draws(&doc, 5).is_empty());
        // What it drew besides is kept.
        let content = form_content(&doc, (5, 0)).unwrap();
        assert!(content.operations.iter().any(|op| op.operator == "Tj"));
    }

    #[test]
    fn a_circle_through_other_forms_is_cut_where_it_closes() {
        let doc = cut(&pdf(&[&[6], &[7], &[5]], true));
        assert_eq!(draws(&doc, 5), BTreeSet::from([b"F6".to_vec()]));
        assert_eq!(draws(&doc, 6), BTreeSet::from([b"F7".to_vec()]));
        assert!(draws(&doc, 7).is_empty());
    }

    #[test]
    fn a_form_without_resources_is_looked_up_where_it_is_drawn() {
        // Form 5 has no resources: its `/F5 Do` is the page's F5, itself.
        let doc = cut(&pdf(&[&[5]], false));
        assert!(draws(&doc, 5).is_empty());
    }

    #[test]
    fn a_deep_chain_is_drawn_to_the_deepest_allowed() {
        let count = MAX_FORM_DEPTH as u32 + 10;
        let chain: Vec<Vec<u32>> = (5..5 + count).map(|n| vec![n + 1]).collect();
        let mut forms: Vec<&[u32]> = chain.iter().map(Vec::as_slice).collect();
        forms.push(&[]);
        let doc = cut(&pdf(&forms, true));
        // Forms 5 … 5+MAX-2 still draw the next; the form at the deepest allowed draws none.
        let deepest = 5 + MAX_FORM_DEPTH as u32 - 1;
        assert_eq!(draws(&doc, deepest - 1).len(), 1);
        assert!(draws(&doc, deepest).is_empty());
    }

    #[test]
    fn a_form_drawn_twice_keeps_its_drawing() {
        // 5 draws 6 and 7, both draw 8: no circle, nothing is cut.
        let doc = cut(&pdf(&[&[6, 7], &[8], &[8], &[]], true));
        assert_eq!(draws(&doc, 5).len(), 2);
        assert_eq!(draws(&doc, 6).len(), 1);
        assert_eq!(draws(&doc, 7).len(), 1);
    }

    #[test]
    fn the_text_of_a_form_that_draws_itself_is_read_once() {
        // Before, this overflowed the reader's stack and ended the process.
        let text = crate::pdf::preview(&pdf(&[&[5]], true), 100).unwrap();
        assert_eq!(text, "x");
        let chain: Vec<Vec<u32>> = (5..2005).map(|n| vec![n + 1]).collect();
        let mut forms: Vec<&[u32]> = chain.iter().map(Vec::as_slice).collect();
        forms.push(&[]);
        let text = crate::pdf::preview(&pdf(&forms, true), 10_000).unwrap();
        assert_eq!(text.matches('x').count(), MAX_FORM_DEPTH);
    }
}
