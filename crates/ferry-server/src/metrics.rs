//! Prometheus metrics (requests by route and status, bytes in and out, latency) and the access
//! log: one line per request, from the same middleware, so both name a request alike.

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use metrics::Gauge;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// An extraction starts a process: milliseconds at best, the timeout (20 s by default) at worst.
const EXTRACTION_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0,
];

/// The process-wide recorder; installed once however many servers a process starts (tests do).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("ferry_http_request_duration_seconds".into()),
                LATENCY_BUCKETS,
            )
            .expect("the bucket list is not empty")
            .set_buckets_for_metric(
                Matcher::Full("ferry_extract_duration_seconds".into()),
                EXTRACTION_BUCKETS,
            )
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed by an embedding program; then ours only
        // renders what it saw, which is nothing, and that is the embedder's choice.
        let _ = metrics::set_global_recorder(recorder);
        describe();
        metrics::gauge!("ferry_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        keep_up(handle.clone());
        handle
    })
}

/// How often recorded latencies are folded into their histograms' buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(1);

/// Folds recorded latencies into their buckets every [`UPKEEP_EVERY`], on a thread of its own.
///
/// The recorder keeps every sample a histogram receives until its buckets are next brought up
/// to date, which it does only when `/metrics` is rendered or upkeep runs. A server nobody
/// scrapes would otherwise hold eight bytes and more per request, forever: a client sending
/// requests could grow it without end.
fn keep_up(handle: PrometheusHandle) {
    let started = std::thread::Builder::new()
        .name("ferry-metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_EVERY);
                handle.run_upkeep();
            }
        });
    if let Err(e) = started {
        tracing::error!(error = %e, "no thread for the metrics' upkeep: latencies pile up until /metrics is read");
    }
}

/// The `# HELP` text of every metric ferry records.
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "ferry_http_requests_total",
        "HTTP requests answered, by route template, method and status"
    );
    describe_histogram!(
        "ferry_http_request_duration_seconds",
        Unit::Seconds,
        "Time from a request's arrival to its answer's headers, by route template, method and status"
    );
    describe_gauge!(
        "ferry_http_requests_in_flight",
        "HTTP requests being handled now (an open event stream counts until it ends)"
    );
    describe_counter!(
        "ferry_http_request_bytes_total",
        Unit::Bytes,
        "Request body bytes received, by route template"
    );
    describe_counter!(
        "ferry_http_response_bytes_total",
        Unit::Bytes,
        "Response body bytes sent, by route template"
    );
    describe_gauge!(
        "ferry_event_streams_open",
        "Server-Sent Event streams open now"
    );
    describe_counter!(
        "ferry_connections_refused_total",
        "Connections closed on arrival because the server held as many as it may"
    );
    describe_gauge!(
        "ferry_extract_waiting",
        "Documents waiting for an extraction worker, as of the last scrape"
    );
    describe_gauge!(
        "ferry_webhook_deliveries_pending",
        "Webhook deliveries waiting to be made (due or retrying), across all nodes, as of the last scrape"
    );
    describe_counter!(
        "ferry_webhook_deliveries_total",
        "Webhook delivery attempts, by outcome (ok, retry, failed: failed for good)"
    );
    describe_histogram!(
        "ferry_extract_duration_seconds",
        Unit::Seconds,
        "Time an extraction worker ran for one document, by op (preview, html, model_image) and outcome (ok, timeout, error)"
    );
    describe_counter!(
        "ferry_store_errors_total",
        "Failures of the stores that are the server's, by kind (database, io: the blob store or file system, disk_full, config)"
    );
    describe_counter!(
        "ferry_jwks_fetches_total",
        "Reads of the identity provider's key set, by outcome (ok, error)"
    );
    describe_gauge!(
        "ferry_build_info",
        "Always 1; the label says which version of ferry is running"
    );
}

/// Counts a request as in flight until its answer's body is done (or dropped).
struct InFlight(Gauge);

impl InFlight {
    fn start(gauge: Gauge) -> InFlight {
        gauge.increment(1.0);
        InFlight(gauge)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Middleware recording each request.
pub async fn track(request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = request.method().clone();
    let start = Instant::now();
    let handles = handles::for_route(route);
    let in_flight = InFlight::start(handles.in_flight);

    let request = request.map(|body| Body::new(Counted::new(body, handles.bytes_in, None)));

    let response = next.run(request).await;
    // One measurement for the histogram and the log line, so the two agree.
    let elapsed = start.elapsed();
    access_line(method.as_str(), route, &response, elapsed);

    let (requests, duration) = handles::for_outcome(route, &method, response.status().as_u16());
    requests.increment(1);
    duration.record(elapsed.as_secs_f64());
    response.map(|body| Body::new(Counted::new(body, handles.bytes_out, Some(in_flight))))
}

/// The request metrics' handles, kept per thread by route template, method and status.
///
/// Asking the recorder for a labelled metric builds its labels as strings and hashes them in
/// a shared registry: six times per request, a noticeable share of a small GET's cost. The
/// handles it returns stay valid, so each thread asks once per route and outcome. Routes are
/// templates (a fixed set); methods and statuses a client can vary, so a route keeps at most
/// [`MAX_OUTCOMES`](handles::MAX_OUTCOMES) of them and asks the recorder afresh beyond that.
mod handles {
    use axum::http::Method;
    use metrics::{Counter, Gauge, Histogram};
    use std::cell::RefCell;
    use std::collections::HashMap;

    pub(super) const MAX_OUTCOMES: usize = 32;

    /// What every request on a route records, whatever its answer.
    #[derive(Clone)]
    pub(super) struct RouteHandles {
        pub(super) in_flight: Gauge,
        pub(super) bytes_in: Counter,
        pub(super) bytes_out: Counter,
    }

    struct Route {
        handles: RouteHandles,
        outcomes: Vec<(Method, u16, Counter, Histogram)>,
    }

    thread_local! {
        static ROUTES: RefCell<HashMap<Box<str>, Route>> = RefCell::new(HashMap::new());
    }

    /// This thread's record of `route`, made on first use. (The recorder is installed when
    /// the router is built, before any request, so no handle kept here is a no-op one.)
    fn known<'a>(routes: &'a mut HashMap<Box<str>, Route>, route: &str) -> &'a mut Route {
        if !routes.contains_key(route) {
            let handles = RouteHandles {
                in_flight: metrics::gauge!("ferry_http_requests_in_flight"),
                bytes_in: metrics::counter!(
                    "ferry_http_request_bytes_total", "route" => route.to_owned()
                ),
                bytes_out: metrics::counter!(
                    "ferry_http_response_bytes_total", "route" => route.to_owned()
                ),
            };
            let outcomes = Vec::new();
            routes.insert(route.into(), Route { handles, outcomes });
        }
        routes.get_mut(route).expect("inserted above")
    }

    pub(super) fn for_route(route: &str) -> RouteHandles {
        ROUTES.with_borrow_mut(|routes| known(routes, route).handles.clone())
    }

    /// The request counter and the latency histogram of one route, method and status.
    pub(super) fn for_outcome(route: &str, method: &Method, status: u16) -> (Counter, Histogram) {
        ROUTES.with_borrow_mut(|routes| {
            let outcomes = &mut known(routes, route).outcomes;
            if let Some((.., requests, duration)) = outcomes
                .iter()
                .find(|(m, s, ..)| m == method && *s == status)
            {
                return (requests.clone(), duration.clone());
            }
            let (route_label, method_label) = (route.to_owned(), method.as_str().to_owned());
            let status_label = status.to_string();
            let requests = metrics::counter!(
                "ferry_http_requests_total",
                "route" => route_label.clone(), "method" => method_label.clone(),
                "status" => status_label.clone()
            );
            let duration = metrics::histogram!(
                "ferry_http_request_duration_seconds",
                "route" => route_label, "method" => method_label, "status" => status_label
            );
            if outcomes.len() < MAX_OUTCOMES {
                outcomes.push((method.clone(), status, requests.clone(), duration.clone()));
            }
            (requests, duration)
        })
    }
}

/// The access log's line for a request, at info under the target `ferry::access`, inside the
/// request's span (which adds its id): the method, the route template (never the path's
/// values or the query, which may carry a signed link's signature), the status, the body's
/// size when the answer declares it, and the time until the answer's headers.
fn access_line(method: &str, route: &str, response: &Response, elapsed: Duration) {
    let status = response.status().as_u16();
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    match http_body::Body::size_hint(response.body()).exact() {
        Some(bytes) => tracing::info!(
            target: "ferry::access", method, route, status, bytes, duration_ms, "request"
        ),
        // A streamed answer (events, a download without a declared length) has no size yet.
        None => tracing::info!(
            target: "ferry::access", method, route, status, duration_ms, "request"
        ),
    }
}

/// A body that counts the bytes passing through it and keeps the inner body's size hint, so
/// a response of known length still goes out with `Content-Length`.
struct Counted {
    inner: Body,
    counter: metrics::Counter,
    /// Held by a response body: the request stays in flight until the body is done.
    _in_flight: Option<InFlight>,
}

impl Counted {
    fn new(
        inner: Body,
        counter: metrics::Counter,
        in_flight: impl Into<Option<InFlight>>,
    ) -> Counted {
        Counted {
            inner,
            counter,
            _in_flight: in_flight.into(),
        }
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.counter.increment(data.len() as u64);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Counts a connection closed on arrival because the server holds as many as it may.
pub fn connection_refused() {
    metrics::counter!("ferry_connections_refused_total").increment(1);
}

#[cfg(test)]
mod tests {
    use super::handles;
    use axum::http::Method;
    use metrics_exporter_prometheus::PrometheusBuilder;

    /// The value of the one sample line that starts with `prefix`.
    fn sample(text: &str, prefix: &str) -> f64 {
        let mut found = text.lines().filter(|l| l.starts_with(prefix));
        let line = found.next().unwrap_or_else(|| panic!("{prefix}: {text}"));
        assert!(found.next().is_none(), "{prefix}: {text}");
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn kept_handles_count_every_request_under_its_own_labels() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            for _ in 0..3 {
                let route = handles::for_route("/r/{x}");
                route.bytes_in.increment(10);
                let (requests, duration) = handles::for_outcome("/r/{x}", &Method::GET, 200);
                requests.increment(1);
                duration.record(0.001);
            }
            handles::for_outcome("/r/{x}", &Method::GET, 404)
                .0
                .increment(1);
            handles::for_outcome("/other", &Method::GET, 200)
                .0
                .increment(1);
            // Past the kept outcomes of a route, each request still counts.
            let extension_methods = handles::MAX_OUTCOMES + 8;
            for i in 0..extension_methods {
                let method = Method::from_bytes(format!("M{i}").as_bytes()).unwrap();
                for _ in 0..2 {
                    handles::for_outcome("/r/{x}", &method, 200).0.increment(1);
                }
            }
        });
        let text = handle.render();
        let total = |route: &str, method: &str, status: &str| {
            sample(
                &text,
                &format!(
                    "ferry_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}"
                ),
            )
        };
        assert_eq!(total("/r/{x}", "GET", "200"), 3.0);
        assert_eq!(total("/r/{x}", "GET", "404"), 1.0);
        assert_eq!(total("/other", "GET", "200"), 1.0);
        for i in 0..handles::MAX_OUTCOMES + 8 {
            assert_eq!(total("/r/{x}", &format!("M{i}"), "200"), 2.0, "M{i}");
        }
        assert_eq!(
            sample(&text, "ferry_http_request_bytes_total{route=\"/r/{x}\"}"),
            30.0
        );
        assert_eq!(
            sample(
                &text,
                "ferry_http_request_duration_seconds_count{route=\"/r/{x}\",method=\"GET\",status=\"200\"}"
            ),
            3.0
        );
    }
}
