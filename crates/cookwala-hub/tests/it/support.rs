//! Shared helpers.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::Value;
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Hub, HubConfig};
use http_body_util::BodyExt;
use tower::ServiceExt;

pub const TOKEN: &str = "test-token-123";

pub fn config() -> HubConfig {
    HubConfig {
        speed: 0.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        ..HubConfig::default()
    }
}

pub async fn hub_in_memory() -> Hub {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::in_memory().unwrap());
    Hub::open(storage, config()).await.unwrap()
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
    pub raw: Vec<u8>,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("")
    }
    pub fn str(&self, key: &str) -> &str {
        self.body.get(key).and_then(Value::as_str).unwrap_or("")
    }
    pub fn seq(&self) -> i64 {
        self.body.get("seq").and_then(Value::as_i64).unwrap()
    }
}

pub async fn call(app: &Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let raw = res.into_body().collect().await.unwrap().to_bytes().to_vec();
    let body = canonical_json::parse(&raw).unwrap_or(Value::Null);
    Reply { status, headers, body, raw }
}

pub fn get(path: &str) -> Request<Body> {
    Request::get(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap()
}

pub fn post(path: &str, key: Option<&str>, body: &str) -> Request<Body> {
    let mut b = Request::post(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/vnd.cookwala+json");
    if let Some(k) = key {
        b = b.header("idempotency-key", k);
    }
    b.body(Body::from(body.to_owned())).unwrap()
}

pub fn recipe_hash(id: &str) -> String {
    canonical_json::digest::document_hash(&cookwala_sim::builtin::recipe(id).unwrap()).unwrap()
}

/// An ExecuteRequest for a built-in recipe.
pub fn request(id: &str, recipe: &str, human: bool) -> String {
    format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:cookwala-rs:{recipe}",
        "recipeHash":"{}","requestedBy":"person:cook","idempotencyKey":"{id}-key",
        "x-hub-human-present":{human}}}"#,
        recipe_hash(recipe)
    )
}

/// Serves `hub` on a port-0 listener, runs `client(addr)` on the blocking pool, then shuts the
/// server down (gracefully) and returns what the client returned.
pub async fn with_server<T, F>(hub: Hub, client: F) -> T
where
    T: Send + 'static,
    F: FnOnce(std::net::SocketAddr) -> T + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(cookwala_hub::serve(hub, listener, async {
        let _ = rx.await;
    }));
    let out = tokio::task::spawn_blocking(move || client(addr)).await.unwrap();
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    out
}
