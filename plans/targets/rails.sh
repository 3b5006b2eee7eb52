#!/usr/bin/env sh
# Starts the Rails target of reference experiment 003 on PORT: Debian's Rails 6.1
# (ruby-rails) under Debian's Puma, in production mode, one process with THREADS
# threads (default 5, Puma's own default). Rails was the first of the write-up's five
# stacks.
# Usage: sh plans/targets/rails.sh PORT [THREADS]; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x /usr/bin/puma ] || ! ruby -e 'require "rails"' 2>/dev/null; then
  echo "Rails or Puma is not installed (apt-get install ruby-rails puma)" >&2
  exit 1
fi
threads="${2:-5}"
cd "$here/rails"
RAILS_ENV=production RACK_ENV=production exec /usr/bin/puma --quiet \
  -b "tcp://127.0.0.1:$1" -t "$threads:$threads" -w 0 config.ru
