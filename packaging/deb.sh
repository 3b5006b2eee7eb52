#!/usr/bin/env bash
# The Debian package: the release binary with its man pages (one per subcommand and
# dialect) and its bash, zsh and fish completions, made by cargo-deb into
# target/debian/. Installs cargo-deb from crates.io when it is missing.
# STAMPEDE_DEB_PROFILE names another Cargo profile to package (CI packages the test
# profile's binary, `dev`, to check what the package holds and how it installs).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
profile="${STAMPEDE_DEB_PROFILE:-release}"
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
cargo build --profile "$profile" --locked -p stampede
assets="$target/$dir/deb-assets"
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$target/$dir/stampede" man --dir "$assets/man"
gzip -9n "$assets/man/"*.1
"$target/$dir/stampede" completions bash > "$assets/completions/stampede"
"$target/$dir/stampede" completions zsh > "$assets/completions/_stampede"
"$target/$dir/stampede" completions fish > "$assets/completions/stampede.fish"
command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked -q
cargo deb -p stampede --no-build --strip --profile "$profile"
