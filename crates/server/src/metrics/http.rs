//! The metrics listener: HTTP/1.1 (hyper) on its own address, in the server's runtime.
//!
//! `GET /metrics` answers 200 with the exposition; any other method or path answers 404.
//! Connections are tasks of a `JoinSet` owned by the accept loop, so they end with it
//! when the server stops.
//!
//! # Why one peer cannot silence it
//!
//! At most [`MAX_CONNECTIONS`] (64) connections are open at once, each serving one
//! request: hyper answers it with `Connection: close` and closes. A connection is *idle*
//! until hyper has read a whole request head, then *answering*. An idle connection is
//! closed after [`HEADER_TIMEOUT`] (1 s; hyper's header read timeout, which runs from
//! the accept). When all 64 are open, a new connection takes the place of the oldest
//! idle one, which is closed unanswered; an answering connection is never displaced, and
//! only when all 64 are answering is the new one closed at accept. So a peer that opens
//! connections and sends nothing (64 of them used to close every scrape unanswered for
//! 10 s at a time) costs a scraper nothing: the scraper's connection is the newest, and
//! its request head follows the connect at once.
//!
//! One request per connection, because with a 1 s header timeout a kept-alive connection
//! would be closed between scrapes anyway (Prometheus scrapes every 15 s by default), and
//! because then a connection goes from idle to answering once and never back, so
//! displacing an idle one can never cut off an answer ([`Slots`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU8, Ordering};
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
use tokio::task::{AbortHandle, JoinSet};

use crate::session::Shared;

/// Time a client has from the accept to the end of its request head.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// Metrics connections open at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// Serves `listener` until the future is dropped (when the server stops).
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    let mut slots = Slots::new(MAX_CONNECTIONS);
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
        let state = match slots.admit() {
            Admit::Free(state) => state,
            Admit::Displaced(state, oldest) => {
                tracing::debug!(%peer, "metrics connection admitted; the oldest idle one closed");
                oldest.abort();
                state
            }
            Admit::Full => {
                tracing::debug!(%peer, "metrics connection refused: {MAX_CONNECTIONS} answering");
                continue;
            }
        };
        let shared = shared.clone();
        let conn_state = state.clone();
        let task = conns.spawn(async move {
            let service = service_fn(move |req| {
                // Answering from now on: never displaced (unless displaced already, in
                // which case this task is being aborted).
                let _ = conn_state.compare_exchange(
                    IDLE,
                    ANSWERING,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                respond(req, shared.clone())
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "metrics connection ended");
            }
        });
        slots.opened(state, task);
    }
}

/// A connection that has not read a whole request head.
const IDLE: u8 = 0;
/// A connection answering its request.
const ANSWERING: u8 = 1;
/// A connection closed to make room for a newer one.
const DISPLACED: u8 = 2;

/// The open metrics connections, oldest first, and who gives way to a new one.
///
/// A connection's state goes from [`IDLE`] either to [`ANSWERING`] (its task, when hyper
/// calls the service) or to [`DISPLACED`] (the accept loop, in [`Slots::admit`]), by
/// compare-and-swap, so exactly one of the two happens: an answering connection is never
/// displaced. The state carries no other data, so the swaps are `Relaxed`.
#[derive(Debug)]
struct Slots {
    max: usize,
    open: VecDeque<Slot>,
}

#[derive(Debug)]
struct Slot {
    state: Arc<AtomicU8>,
    task: AbortHandle,
}

/// What [`Slots::admit`] decided for a new connection.
#[derive(Debug)]
enum Admit {
    /// A place was free: the new connection's state.
    Free(Arc<AtomicU8>),
    /// The oldest idle connection gave way (abort its task): the new one's state.
    Displaced(Arc<AtomicU8>, AbortHandle),
    /// Every connection is answering: close the new one.
    Full,
}

impl Slots {
    fn new(max: usize) -> Slots {
        Slots { max, open: VecDeque::with_capacity(max) }
    }

    /// Makes room for a new connection, if there is or can be some; record the connection
    /// with [`Slots::opened`] after.
    fn admit(&mut self) -> Admit {
        self.open.retain(|s| !s.task.is_finished());
        let state = Arc::new(AtomicU8::new(IDLE));
        if self.open.len() < self.max {
            return Admit::Free(state);
        }
        let oldest_idle = self.open.iter().position(|s| {
            s.state.compare_exchange(IDLE, DISPLACED, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        });
        match oldest_idle.and_then(|i| self.open.remove(i)) {
            Some(s) => Admit::Displaced(state, s.task),
            None => Admit::Full,
        }
    }

    /// Records a connection [`Slots::admit`] made room for.
    fn opened(&mut self, state: Arc<AtomicU8>, task: AbortHandle) {
        self.open.push_back(Slot { state, task });
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
    let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = super::exposition::Format::from_accept(accept);
    Ok(match super::scrape(&shared, format).await {
        Some(text) => reply(StatusCode::OK, format.content_type(), text),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that runs until aborted; its abort handle.
    fn task(set: &mut JoinSet<()>) -> AbortHandle {
        set.spawn(std::future::pending())
    }

    #[tokio::test]
    async fn the_oldest_idle_connection_gives_way_and_an_answering_one_never() {
        let mut set = JoinSet::new();
        let mut slots = Slots::new(3);
        let mut states = Vec::new();
        for _ in 0..3 {
            let Admit::Free(state) = slots.admit() else { panic!("room for three") };
            slots.opened(state.clone(), task(&mut set));
            states.push(state);
        }
        // The oldest answers: the second, the oldest idle one, gives way.
        states[0].store(ANSWERING, Ordering::Relaxed);
        let Admit::Displaced(fourth, gone) = slots.admit() else { panic!("an idle one gives way") };
        assert_eq!(states[1].load(Ordering::Relaxed), DISPLACED);
        gone.abort();
        slots.opened(fourth.clone(), task(&mut set));
        // Then the third (idle), then none: the first and the fourth answer.
        let Admit::Displaced(fifth, gone) = slots.admit() else { panic!("the third gives way") };
        assert_eq!(states[2].load(Ordering::Relaxed), DISPLACED);
        gone.abort();
        slots.opened(fifth.clone(), task(&mut set));
        fourth.store(ANSWERING, Ordering::Relaxed);
        fifth.store(ANSWERING, Ordering::Relaxed);
        assert!(matches!(slots.admit(), Admit::Full), "every connection answers");
        assert_eq!(states[0].load(Ordering::Relaxed), ANSWERING);
        // A connection that ended frees its place.
        slots.open[0].task.abort();
        while !slots.open[0].task.is_finished() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(slots.admit(), Admit::Free(_)));
    }
}
