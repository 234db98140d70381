//! The cold-start baseline of `infra/bench/cold_start.py`: a hello-world on the same Lambda
//! HTTP runtime and build profile as the function binaries, with nothing else to set up.

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_: Request| async {
        Ok::<_, Error>(Response::new(Body::from("{\"status\":\"ok\"}")))
    }))
    .await
}
