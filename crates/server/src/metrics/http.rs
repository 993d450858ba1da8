//! The metrics listener: HTTP/1.1 (hyper) on its own address, in the server's runtime.
//!
//! `GET /metrics` answers 200 with the exposition; any other method or path answers 404.
//! Connections are tasks of a `JoinSet` owned by the accept loop, so they end with it
//! when the server stops. A client gets [`HEADER_TIMEOUT`] to send a request's head, and
//! at most [`MAX_CONNECTIONS`] connections are served at once (more are closed at
//! accept): a scraper needs one.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::session::Shared;

/// Time a client has to send the head of a request.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Metrics connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// Serves `listener` until the future is dropped (when the server stops).
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while conns.try_join_next().is_some() {}
        if conns.len() >= MAX_CONNECTIONS {
            tracing::debug!(%peer, "metrics connection refused: {MAX_CONNECTIONS} already open");
            continue;
        }
        let shared = shared.clone();
        conns.spawn(async move {
            let service = service_fn(move |req| respond(req, shared.clone()));
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "metrics connection ended");
            }
        });
    }
}

async fn respond(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET || req.uri().path() != "/metrics" {
        let body = "not found: the metrics are at GET /metrics\n";
        return Ok(reply(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", body.into()));
    }
    Ok(match super::scrape(&shared).await {
        Some(text) => reply(StatusCode::OK, super::exposition::CONTENT_TYPE, text),
        None => {
            let body = "the server is stopping\n";
            reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body.into())
        }
    })
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    r
}
