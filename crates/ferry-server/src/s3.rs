//! The S3 door on ferry's port (docs/s3.md): the `ferry-s3` service mounted at `/s3`, with
//! the server's credentials — access key secrets derived from the JWT secret
//! ([`KeySecrets`]), and bearer tokens as session tokens.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use ferry_s3::TokenRefusal;
use tower::ServiceExt;

use crate::auth::{Auth, Principal};
use crate::error::{ApiError, TokenFault};
use crate::request_id::Replaced;
use crate::signing::KeySecrets;
use crate::state::AppState;

struct Identities {
    secrets: KeySecrets,
    auth: Auth,
}

#[async_trait::async_trait]
impl ferry_s3::Identities for Identities {
    fn secret_of(&self, access_key_id: &str) -> String {
        self.secrets.secret_of(access_key_id)
    }

    async fn session(&self, token: &str) -> Result<Principal, TokenRefusal> {
        self.auth
            .verify(token)
            .await
            .map_err(|e| match e.token_fault() {
                Some(TokenFault::Expired) => TokenRefusal::Expired(e.message),
                _ => TokenRefusal::Invalid(e.message),
            })
    }
}

/// The door as a service axum can route to (`/s3` and `/s3/{*rest}`).
pub fn door(
    state: &AppState,
) -> impl tower::Service<Request, Response = Response, Error = Infallible, Future: Send>
+ Clone
+ Send
+ 'static {
    let service = ferry_s3::service(ferry_s3::Setup {
        app: state.app.clone(),
        identities: Arc::new(Identities {
            secrets: KeySecrets::new(&state.config.jwt_secret),
            auth: state.auth.clone(),
        }),
        region: state.config.s3_region.clone(),
    });
    tower::service_fn(move |mut request: Request| {
        let service = service.clone();
        async move {
            // The door names the id this server gave the request, and checks the signature
            // over the headers as the client sent them.
            if let Some(id) = request.headers().get("x-request-id").cloned() {
                request.extensions_mut().insert(ferry_s3::RequestId(id));
            }
            if let Some(Replaced(originals)) = request.extensions_mut().remove::<Replaced>() {
                request.headers_mut().remove("x-request-id");
                for original in originals {
                    request.headers_mut().append("x-request-id", original);
                }
            }
            Ok(match service.oneshot(request).await {
                Ok(response) => response.map(Body::new),
                Err(e) => ApiError::internal(format!("the S3 door failed: {e:?}")).into_response(),
            })
        }
    })
}
