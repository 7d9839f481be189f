# The locksim binary and the campaign files, for deploy/kubernetes/campaign-job.yaml.
#   docker build -t locksim:latest .
FROM rust:1.88-bookworm AS build
WORKDIR /src
COPY . .
# .cargo/config.toml turns on madsim's simulation mode (--cfg madsim) for the whole build.
RUN cargo build --release --locked -p locksim-cli

FROM debian:bookworm-slim
COPY --from=build /src/target/release/locksim /usr/local/bin/locksim
COPY sims/ /locksim/sims/
# Campaign files name their paths relative to here (sims/...), as in a clone.
WORKDIR /locksim
ENTRYPOINT ["locksim"]
