//! `edit_file` on a server whose data folder is on a file system with one-second timestamps:
//! 50 agents' edits of one file at once, each redone when it answers that the file changed,
//! all land. Every edit keeps the file's size, so only ETags made of the bytes tell the
//! versions apart.

use crate::support::TestApp;
use crate::thread_support::{put_file, thread};
use ferry_test_support::coarse_fs::coarse_timestamps_folder;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_edits_all_land() {
    let Some(folder) = coarse_timestamps_folder() else {
        return;
    };
    let app = TestApp::with_data(folder.path().join("data"), |_| {}).await;
    let t = thread(&app, "alice").await;
    let marks: String = (0..50).map(|i| format!("a{i:02} ")).collect();
    put_file(&app, &t, "outputs/marks.txt", marks.as_bytes()).await;
    let app = std::sync::Arc::new(app);
    let editors: Vec<_> = (0..50)
        .map(|i| {
            let (app, agent) = (app.clone(), t.agent.clone());
            tokio::spawn(async move {
                let edit = json!({
                    "path": "/sandbox/outputs/marks.txt",
                    "old_string": format!("a{i:02} "),
                    "new_string": format!("b{i:02} "),
                });
                loop {
                    let reply = app
                        .post_json("/api/fs/edit_file", &agent, edit.clone())
                        .await;
                    match reply.status.as_u16() {
                        200 => return,
                        412 => continue,
                        other => panic!("edit {i}: {other} {}", reply.text()),
                    }
                }
            })
        })
        .collect();
    for editor in editors {
        editor.await.unwrap();
    }
    let after = app.get(&t.url("/sandbox/outputs/marks.txt"), &t.user).await;
    let expected: String = (0..50).map(|i| format!("b{i:02} ")).collect();
    assert_eq!(after.text(), expected, "an acknowledged edit was lost");
}
