# A small image holding one static stampede binary (and the CA roots `load` verifies
# https:// certificates against), for `stampede k8s --image` and any container runner:
#
#   docker build -t registry.example/stampede:0.1 .
#   docker push registry.example/stampede:0.1
#
# The build stage is Alpine's Rust, whose target is musl: the binary links nothing at
# run time, so the final stage is `scratch` plus that binary and the certificates.
FROM rust:1.89-alpine AS build
RUN apk add --no-cache musl-dev gcc ca-certificates
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p stampede \
 && strip target/release/stampede

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/target/release/stampede /usr/local/bin/stampede
ENV PATH=/usr/local/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# A Job's pod gives the whole command line (`stampede load …`); run by hand, the
# image is the stampede command: `docker run IMAGE load …`.
ENTRYPOINT ["stampede"]
