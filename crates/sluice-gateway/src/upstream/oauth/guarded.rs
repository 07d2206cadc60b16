//! Every HTTP request of the OAuth client goes through the outbound guard
//! (S-10): each URL (metadata, registration, token, and every redirect
//! hop) is resolved and checked, and connected to only at the addresses
//! that passed; answers are read up to a fixed size.

use std::time::Duration;

use futures::StreamExt;
use http::{Method, StatusCode, header};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::outbound;

/// The most redirects one OAuth request follows, when it may follow any.
const MAX_REDIRECTS: usize = 5;
/// The longest answer read: metadata documents and token responses are
/// small.
const MAX_BODY: usize = 256 * 1024;
/// When the OAuth client names no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The OAuth client's HTTP, under the outbound guard of one upstream
/// (`allow_private` is the upstream's).
pub(crate) struct GuardedHttp {
    allow_private: bool,
}

#[derive(Debug, thiserror::Error)]
enum GuardedError {
    #[error("{0}")]
    Refused(#[from] sluice_core::outbound::OutboundError),
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("a redirect without a usable Location")]
    BadRedirect,
    #[error("an answer larger than {MAX_BODY} bytes")]
    TooLarge,
}

impl GuardedHttp {
    pub(crate) fn new(allow_private: bool) -> GuardedHttp {
        GuardedHttp { allow_private }
    }

    async fn execute(
        &self,
        request: OAuthHttpRequest,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let OAuthHttpRequest {
            request,
            redirect_policy,
            timeout,
            ..
        } = request;
        let (parts, body) = request.into_parts();
        let (mut method, mut body) = (parts.method, body);
        let mut url = parts.uri.to_string();
        let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
        for hop in 0..=MAX_REDIRECTS {
            let checked = outbound::resolve_checked(&url, self.allow_private)
                .await
                .map_err(GuardedError::from)?;
            let builder = reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(Duration::from_secs(10));
            let client = outbound::pinned_client(builder, &checked)?;
            let response = client
                .request(method.clone(), checked.url.clone())
                .headers(parts.headers.clone())
                .body(body.clone())
                .send()
                .await?;
            let status = response.status();
            if status.is_redirection() && redirect_policy == OAuthHttpRedirectPolicy::Follow {
                if hop == MAX_REDIRECTS {
                    return Err(GuardedError::TooManyRedirects.into());
                }
                let next = response
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| checked.url.join(l).ok())
                    .ok_or(GuardedError::BadRedirect)?;
                // RFC 9110 15.4: a 303, and in practice a 301 or 302 after
                // a POST, is followed with a GET without a body.
                if status == StatusCode::SEE_OTHER
                    || (method == Method::POST
                        && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND))
                {
                    method = Method::GET;
                    body = Vec::new();
                }
                url = next.to_string();
                continue;
            }
            return read(response).await;
        }
        Err(GuardedError::TooManyRedirects.into())
    }
}

impl OAuthHttpClient for GuardedHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(GuardedHttp::execute(self, request))
    }
}

/// The whole answer, as the OAuth client takes it.
async fn read(
    response: reqwest::Response,
) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
    let mut builder = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(GuardedError::TooLarge.into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(builder.body(body)?)
}
