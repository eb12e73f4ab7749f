#!/bin/sh
# Installs Debian's chromium for the report's browser test (tests/test_report_browser.py)
# when it is missing and apt-get can install it (root). Never fails the test run: without
# chromium the browser test skips and says why.
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
	echo "chromium missing and apt-get unavailable (or not root): the browser test will skip" >&2
	exit 0
fi
echo "installing chromium for the report's browser test (apt-get)" >&2
(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	>/dev/null 2>&1 || echo "could not install chromium: the browser test will skip" >&2
exit 0
