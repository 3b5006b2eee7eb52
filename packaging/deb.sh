#!/usr/bin/env bash
# The Debian package: the release binary with its man pages (one per subcommand and
# dialect) and its bash, zsh and fish completions, made by cargo-deb into
# target/debian/. Installs cargo-deb from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked -p stampede
assets="$target/release/deb-assets"
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$target/release/stampede" man --dir "$assets/man"
gzip -9n "$assets/man/"*.1
"$target/release/stampede" completions bash > "$assets/completions/stampede"
"$target/release/stampede" completions zsh > "$assets/completions/_stampede"
"$target/release/stampede" completions fish > "$assets/completions/stampede.fish"
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked -q
cargo deb -p stampede --no-build --strip
