//! A presentation's slides as images for the preview panel (docs/reference/uploads.md, "Pages
//! and slides as images") and for a model that asks with `pages`: drawn by the office renderer
//! into a PDF, whose pages are drawn as a PDF's are; without a renderer, a clear 422 and the
//! deck's HTML rendering stays.

use crate::support::TestApp;
use crate::thread_support::{Thread, fixture, thread, upload_one};
use serde_json::{Value, json};

fn slide(t: &Thread, upload: &Value, n: u32) -> String {
    t.url(&format!(
        "/uploads/{}/pages/{n}",
        upload["id"].as_str().unwrap()
    ))
}

/// An app whose extraction has the office renderer; `None` (said loudly) where the machine has
/// none.
async fn with_office_renderer() -> Option<TestApp> {
    let (program, sandbox) = ferry_test_support::peers::office_renderer()?;
    let office = ferry_extract::OfficeRenderer { program, sandbox };
    Some(TestApp::with(|c| c.app.extract.office = Some(office)).await)
}

#[tokio::test]
async fn the_preview_panel_reads_a_decks_slides_as_images() {
    let Some(app) = with_office_renderer().await else {
        return;
    };
    let t = thread(&app, "alice").await;
    let deck = upload_one(&app, &t, "deck.pptx", &fixture("deck.pptx")).await;
    // Its kind stays the HTML rendering's: the panel asks for slides first.
    assert_eq!(deck["previewKind"], "html");

    let drawn = app.get(&slide(&t, &deck, 2), &t.user).await;
    drawn.expect(200, None);
    assert_eq!(
        drawn.header("x-page-count"),
        Some("4"),
        "one page per slide"
    );
    // PNG, or JPEG where that is smaller (a slide that is a photograph).
    let kind = drawn.header("content-type").unwrap().to_owned();
    assert!(kind == "image/png" || kind == "image/jpeg", "{kind}");
    let size = imagesize::blob_size(&drawn.body).expect("a picture");
    assert_eq!(
        size.width.max(size.height),
        1568,
        "drawn at the size a vision model takes"
    );
    assert!(
        drawn
            .header("content-security-policy")
            .unwrap()
            .contains("sandbox")
    );
    // The deck was drawn once: the next slide is a page of the kept PDF, not a new one.
    let kept = |dir: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let entries: Vec<_> = std::fs::read_dir(dir.join("cache/slides-pdf"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        std::fs::metadata(&entries[0]).unwrap().ino()
    };
    let drawn_once = kept(app.dir.path());
    app.get(&slide(&t, &deck, 4), &t.user)
        .await
        .expect(200, None);
    assert_eq!(kept(app.dir.path()), drawn_once);

    app.get(&slide(&t, &deck, 5), &t.user)
        .await
        .expect_invalid("the document has 4 pages; there is no page 5");
    let stranger = thread(&app, "mallory").await;
    app.get(&slide(&t, &deck, 1), &stranger.user)
        .await
        .expect(404, Some("NOT_FOUND"));

    // A file named as a deck that is not one: a clear refusal, remembered, every time.
    let broken = upload_one(&app, &t, "broken.pptx", b"PK\x03\x04 not a deck").await;
    let remembered = app.dir.path().join(format!(
        "cache/slides-pdf/{}.refused",
        broken["sha256"].as_str().unwrap()
    ));
    for _ in 0..2 {
        let refused = app.get(&slide(&t, &broken, 1), &t.user).await;
        refused.expect(422, Some("UNSUPPORTED_FILE_TYPE"));
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with("the slides of broken.pptx cannot be drawn"),
            "{message}"
        );
        assert!(remembered.is_file(), "the refusal is kept");
    }
    let scratch = app.dir.path().join("cache/scratch");
    assert_eq!(
        std::fs::read_dir(&scratch).unwrap().count(),
        0,
        "no scratch folder is left behind"
    );
}

#[tokio::test]
async fn without_an_office_renderer_a_decks_slides_are_refused_and_its_html_stays() {
    let app = TestApp::with(|c| c.app.extract.office = None).await;
    let t = thread(&app, "alice").await;
    let deck = upload_one(&app, &t, "deck.pptx", &fixture("deck.pptx")).await;
    let refused = app.get(&slide(&t, &deck, 1), &t.user).await;
    refused.expect(422, Some("UNSUPPORTED_FILE_TYPE"));
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no office renderer"),
        "{}",
        refused.json()
    );
    let id = deck["id"].as_str().unwrap();
    let html = app
        .get(&t.url(&format!("/uploads/{id}/preview")), &t.user)
        .await;
    html.expect(200, None);
    assert!(
        html.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
}

/// A model asking for a deck's `pages` (an upload's model content, `read_file`) is shown its
/// slides as a PDF's pages are shown: each slide's image, then `Slide N of M of NAME:` and its
/// text.
#[tokio::test]
async fn a_model_asking_for_pages_sees_a_decks_slides_as_images() {
    let Some(app) = with_office_renderer().await else {
        return;
    };
    let t = thread(&app, "alice").await;
    let deck = upload_one(&app, &t, "deck.pptx", &fixture("deck.pptx")).await;
    let id = deck["id"].as_str().unwrap();

    // Without pages, the deck's text, as before: drawing it takes the office renderer.
    let plain = app
        .get(&t.url(&format!("/uploads/{id}/model-content")), &t.agent)
        .await;
    plain.expect(200, None);
    assert_eq!(
        plain.json().as_array().unwrap().len(),
        1,
        "{}",
        plain.json()
    );

    let shown = app
        .get(
            &t.url(&format!("/uploads/{id}/model-content?pages=3")),
            &t.agent,
        )
        .await;
    shown.expect(200, None);
    let blocks = shown.json().as_array().unwrap().clone();
    assert_eq!(
        blocks.len(),
        3,
        "the note, the slide's image, its text: {blocks:?}"
    );
    assert_eq!(blocks[1]["type"], "image");
    let text = blocks[2]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Slide 3 of 4 of deck.pptx:\n") && text.contains("Revenue by Region"),
        "{text}"
    );

    let read = app
        .post_json(
            "/api/fs/read_file",
            &t.agent,
            json!({"path": "/sandbox/user_uploads/deck.pptx", "pages": "2"}),
        )
        .await;
    read.expect(200, None);
    let read = read.json();
    assert_eq!(
        (read["kind"].as_str(), read["totalPages"].as_u64()),
        (Some("pages"), Some(4))
    );
    assert_eq!(
        read["content"][1]["text"],
        "Slide 2 of 4 of deck.pptx: no text on this slide; what it shows is in its image"
    );
}

#[tokio::test]
async fn without_an_office_renderer_a_model_asking_for_a_decks_pages_is_told_why() {
    let app = TestApp::with(|c| c.app.extract.office = None).await;
    let t = thread(&app, "alice").await;
    let deck = upload_one(&app, &t, "deck.pptx", &fixture("deck.pptx")).await;
    let id = deck["id"].as_str().unwrap();
    let shown = app
        .get(
            &t.url(&format!("/uploads/{id}/model-content?pages=1")),
            &t.agent,
        )
        .await;
    shown.expect(200, None);
    let blocks = shown.json().as_array().unwrap().clone();
    let said = blocks[1]["text"].as_str().unwrap();
    assert!(
        said.starts_with("[The pages of deck.pptx cannot be shown as images: ")
            && said.contains("no office renderer"),
        "{said}"
    );
}
