//! What a model is handed of an upload or a message (docs/reference/uploads.md, "Model
//! content"): images as images, scaled to what vision models take, each with its hidden note;
//! documents as their note; messages as their text followed by their uploads.

use crate::support::TestApp;
use crate::thread_support::{Thread, png, png_declaring, publish, put_file, thread, upload_one};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Width and height from a PNG's header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

fn blocks(reply: &crate::support::Reply) -> Vec<Value> {
    reply.expect(200, None);
    reply.json().as_array().unwrap().clone()
}

/// The path of an upload's model content.
fn upload_url(t: &Thread, upload: &Value) -> String {
    t.url(&format!(
        "/uploads/{}/model-content",
        upload["id"].as_str().unwrap()
    ))
}

/// An upload's model content, as the thread's owner reads it.
async fn blocks_of_upload(app: &TestApp, t: &Thread, upload: &Value) -> Vec<Value> {
    blocks(&app.get(&upload_url(t, upload), &t.user).await)
}

fn image_bytes(block: &Value) -> Vec<u8> {
    assert_eq!(block["type"], "image", "{block}");
    STANDARD.decode(block["base64"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn an_image_is_the_image_then_its_note() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let small = png(30, 20);
    let upload = upload_one(&app, &t, "shot.png", &small).await;
    let url = upload_url(&t, &upload);

    let got = blocks(&app.get(&url, &t.user).await);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["mime_type"], "image/png");
    assert_eq!(
        image_bytes(&got[0]),
        small,
        "an image that fits is sent unchanged"
    );
    assert_eq!(
        got[1],
        json!({ "type": "text", "text": upload["attachmentXml"] })
    );

    // The agent of the thread reads it too; the answer does not change.
    assert_eq!(blocks(&app.get(&url, &t.agent).await), got);
}

#[tokio::test]
async fn a_large_image_is_scaled_to_a_long_edge_of_1568_with_its_aspect() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "wide.png", &png(2000, 1000)).await;
    let url = upload_url(&t, &upload);
    let got = blocks(&app.get(&url, &t.user).await);
    let shown = image_bytes(&got[0]);
    assert_eq!(png_size(&shown), (1568, 784));
    assert!(shown.len() <= 5_000_000);
    // The original stays as it was, in the sandbox and behind the download.
    let original = app
        .get(
            &t.url(&format!(
                "/uploads/{}/content",
                upload["id"].as_str().unwrap()
            )),
            &t.user,
        )
        .await;
    assert_eq!(png_size(&original.body), (2000, 1000));

    // Made once: the derived copy is kept by the content's hash.
    let kept = app
        .state
        .config
        .app
        .data_dir
        .join("cache/model")
        .join(format!("{}.json", upload["sha256"].as_str().unwrap()));
    assert!(kept.is_file(), "{}", kept.display());
    assert_eq!(blocks(&app.get(&url, &t.user).await), got);
}

#[tokio::test]
async fn a_document_is_its_note_with_the_preview() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "q.csv", b"region,q1\nNorth,125000\n").await;
    let got = blocks_of_upload(&app, &t, &upload).await;
    assert_eq!(
        got,
        [json!({ "type": "text", "text": upload["attachmentXml"] })]
    );
    assert!(
        got[0]["text"]
            .as_str()
            .unwrap()
            .contains("Row 1: North | 125000")
    );
}

/// A PDF whose page N (from 1) of `count` says `Text of page N`, or, with `scan`, holds a
/// drawing and no text at all.
fn pdf(count: usize, scan: bool) -> Vec<u8> {
    use ferry_test_support::documents::{letter_page_saying, letter_pdf};
    let contents: Vec<String> = (1..=count)
        .map(|n| {
            if scan {
                "0.2 g 72 500 300 200 re f".to_owned()
            } else {
                letter_page_saying(&format!("Text of page {n}"))
            }
        })
        .collect();
    letter_pdf(&contents)
}

#[tokio::test]
async fn a_pdf_is_its_note_then_its_first_pages_as_images_beside_their_text() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "report.pdf", &pdf(7, false)).await;
    let got = blocks_of_upload(&app, &t, &upload).await;
    // The note, five pages of an image and a text each, and how to ask for the rest.
    assert_eq!(got.len(), 1 + 5 * 2 + 1, "{got:?}");
    assert_eq!(got[0]["text"], upload["attachmentXml"]);
    for page in 1..=5 {
        let image = image_bytes(&got[2 * page - 1]);
        let (width, height) = png_size(&image);
        assert_eq!(height, 1568, "page {page}: the long edge is the model's");
        assert_eq!(width, 612 * 1568 / 792);
        assert_eq!(
            got[2 * page]["text"],
            format!("Page {page} of 7 of report.pdf:\nText of page {page}")
        );
    }
    assert_eq!(
        got[11]["text"],
        "[report.pdf has 7 pages; pages 1-5 are shown. Ask for others with pages, e.g. \
         pages=6-7]"
    );

    // Pages asked for come ascending, once each, and nothing is said of the others.
    let url = format!("{}?pages=7,2,2", upload_url(&t, &upload));
    let chosen = blocks(&app.get(&url, &t.agent).await);
    assert_eq!(chosen.len(), 1 + 2 * 2, "{chosen:?}");
    assert_eq!(
        chosen[2]["text"],
        "Page 2 of 7 of report.pdf:\nText of page 2"
    );
    assert_eq!(
        chosen[4]["text"],
        "Page 7 of 7 of report.pdf:\nText of page 7"
    );
    // The same page drawn for the first ask is the one kept and sent again.
    assert_eq!(chosen[1], got[3]);
    let kept = app
        .state
        .config
        .app
        .data_dir
        .join("cache/pdf-pages")
        .join(upload["sha256"].as_str().unwrap());
    assert_eq!(
        std::fs::read_dir(&kept).unwrap().count(),
        6,
        "pages 1-5 and 7"
    );
}

#[tokio::test]
async fn pages_that_cannot_be_shown_are_refused_with_what_to_write_instead() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "short.pdf", &pdf(3, false)).await;
    let sheet = upload_one(&app, &t, "q.csv", b"a,b\n1,2\n").await;
    for (pages, message) in [
        ("9", "the document has 3 pages; there is no page 9"),
        ("2-4", "the document has 3 pages; there is no page 4"),
        (
            "x",
            "pages must list page numbers and ranges such as 1-3,7; 'x' is not one",
        ),
        ("0", "pages are numbered from 1"),
        ("3-1", "the range '3-1' ends before it starts"),
        (
            "1-101",
            "pages asks for 101 pages; one request shows at most 100",
        ),
    ] {
        let url = format!("{}?pages={pages}", upload_url(&t, &upload));
        app.get(&url, &t.user).await.expect_invalid(message);
    }
    let url = format!("{}?pages=1", upload_url(&t, &sheet));
    app.get(&url, &t.user)
        .await
        .expect_invalid("pages applies to PDF files and presentations (PPTX); q.csv is neither");
}

#[tokio::test]
async fn the_preview_panel_reads_a_pdfs_pages_as_images() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "short.pdf", &pdf(2, false)).await;
    let sheet = upload_one(&app, &t, "q.csv", b"a,b\n1,2\n").await;
    let page = |upload: &Value, n: u32| {
        t.url(&format!(
            "/uploads/{}/pages/{n}",
            upload["id"].as_str().unwrap()
        ))
    };
    let drawn = app.get(&page(&upload, 2), &t.user).await;
    drawn.expect(200, None);
    assert_eq!(drawn.header("content-type"), Some("image/png"));
    assert_eq!(drawn.header("x-page-count"), Some("2"));
    assert!(
        drawn
            .header("content-security-policy")
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(drawn.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(png_size(&drawn.body), (612 * 1568 / 792, 1568));
    // The same drawing a model is shown of that page.
    let url = format!("{}?pages=2", upload_url(&t, &upload));
    let shown = blocks(&app.get(&url, &t.user).await);
    assert_eq!(image_bytes(&shown[1]), drawn.body.to_vec());

    app.get(&page(&upload, 3), &t.user)
        .await
        .expect_invalid("the document has 2 pages; there is no page 3");
    app.get(&page(&upload, 0), &t.user)
        .await
        .expect_invalid("pages are numbered from 1");
    app.get(&page(&sheet, 1), &t.user)
        .await
        .expect(422, Some("UNSUPPORTED_FILE_TYPE"));
    let stranger = thread(&app, "mallory").await;
    app.get(&page(&upload, 1), &stranger.user)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn a_scan_without_text_is_shown_as_its_pages() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "scan.pdf", &pdf(1, true)).await;
    assert!(
        upload["previewError"]
            .as_str()
            .unwrap()
            .starts_with("no text layer (1 pages)"),
        "{upload}"
    );
    let got = blocks_of_upload(&app, &t, &upload).await;
    assert_eq!(got.len(), 3, "{got:?}");
    let image = image::load_from_memory(&image_bytes(&got[1]))
        .unwrap()
        .to_luma8();
    // The grey rectangle is there to be seen: at (200, 200) points from the top left.
    let s = 1568.0 / 792.0;
    let pixel = image.get_pixel((200.0 * s) as u32, (200.0 * s) as u32)[0];
    assert!(pixel < 80, "the drawing is dark grey, got {pixel}");
    assert_eq!(
        got[2]["text"],
        "Page 1 of 1 of scan.pdf: no text on this page; what it shows is in its image"
    );
}

#[tokio::test]
async fn an_image_bomb_uploads_with_a_preview_error_and_is_never_decoded() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "bomb.png", &png_declaring(100_000, 100_000)).await;
    let error = upload["previewError"].as_str().unwrap();
    assert!(error.contains("100000 × 100000 pixels"), "{upload}");
    let got = blocks_of_upload(&app, &t, &upload).await;
    assert_eq!(got.len(), 2, "{got:?}");
    let said = got[0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("[The image bomb.png cannot be shown:")
            && said.contains("100000 × 100000"),
        "{said}"
    );
    assert_eq!(got[1]["text"], upload["attachmentXml"]);
    app.get("/healthz", "").await.expect(200, None);
}

#[tokio::test]
async fn a_message_is_its_text_then_its_uploads() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let sheet = upload_one(&app, &t, "q.csv", b"region,q1\nNorth,125000\n").await;
    let image = upload_one(&app, &t, "shot.png", &png(4, 3)).await;
    let message = app
        .post_json(
            &t.url("/messages"),
            &t.user,
            json!({ "text": "what is in these?", "uploadIds": [image["id"], sheet["id"]] }),
        )
        .await;
    message.expect(201, None);
    let id = message.json()["id"].as_i64().unwrap();
    let got = blocks(
        &app.get(&t.url(&format!("/events/{id}/model-content")), &t.agent)
            .await,
    );
    let kinds: Vec<&str> = got.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image", "text", "text"]);
    assert_eq!(got[0]["text"], "what is in these?");
    assert_eq!(image_bytes(&got[1]), png(4, 3));
    assert_eq!(got[2]["text"], image["attachmentXml"]);
    assert_eq!(got[3]["text"], sheet["attachmentXml"]);
    // The event itself carries no image bytes.
    assert!(!message.text().contains("base64"));

    // An upload event is its upload's blocks; an agent's plain message is its text.
    let events = crate::thread_support::stored_events(&app, &t, &t.user).await;
    let upload_event = events.iter().find(|e| e["type"] == "upload").unwrap();
    let got = blocks(
        &app.get(
            &t.url(&format!("/events/{}/model-content", upload_event["id"])),
            &t.user,
        )
        .await,
    );
    assert_eq!(
        got,
        [json!({ "type": "text", "text": sheet["attachmentXml"] })]
    );
    let said = app
        .post_json(&t.url("/messages"), &t.agent, json!({ "text": "Looking." }))
        .await;
    said.expect(201, None);
    let got = blocks(
        &app.get(
            &t.url(&format!("/events/{}/model-content", said.json()["id"])),
            &t.user,
        )
        .await,
    );
    assert_eq!(got, [json!({ "type": "text", "text": "Looking." })]);
}

#[tokio::test]
async fn events_without_model_content_and_unknown_ones_are_refused() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    put_file(&app, &t, "outputs/r.md", b"# R").await;
    let published = publish(&app, &t, "/sandbox/outputs/r.md", "R").await;
    published.expect(201, None);
    let events = crate::thread_support::stored_events(&app, &t, &t.user).await;
    let event = events
        .iter()
        .find(|e| e["type"] == "file_published")
        .unwrap();
    let reply = app
        .get(
            &t.url(&format!("/events/{}/model-content", event["id"])),
            &t.user,
        )
        .await;
    reply.expect(400, Some("INVALID_REQUEST"));
    assert!(reply.text().contains("file_published"), "{}", reply.text());
    for missing in ["999", "0", "-1", "abc"] {
        app.get(&t.url(&format!("/events/{missing}/model-content")), &t.user)
            .await
            .expect(404, Some("NOT_FOUND"));
    }
    app.get(&t.url("/uploads/nope/model-content"), &t.user)
        .await
        .expect(404, Some("NOT_FOUND"));
}

#[tokio::test]
async fn another_users_upload_is_not_found() {
    let app = TestApp::new().await;
    let t = thread(&app, "alice").await;
    let upload = upload_one(&app, &t, "shot.png", &png(2, 2)).await;
    let url = upload_url(&t, &upload);
    app.get(&url, &app.user("mallory"))
        .await
        .expect(404, Some("NOT_FOUND"));
    app.get(&url, "").await.expect(401, Some("UNAUTHENTICATED"));
}
