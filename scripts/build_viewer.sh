#!/usr/bin/env bash
# Rebuild the viewer component's bundle (components/viewer/build) from its npm sources.
# Needs node >= 20 and npm with the npm registry; the built bundle is committed, so running
# the app or the tests never needs node. BUILD_INFO records the sources it was built from
# (tests/test_viewer_data.py fails when the sources change without a rebuild).
set -euo pipefail
cd "$(dirname "$0")/../components/viewer/frontend"
npm ci --no-audit --no-fund
npm run build
cd ../../..
"${PYTHON:-.venv/bin/python}" -c "from components.viewer import sources_digest; print(sources_digest())" \
  > components/viewer/build/BUILD_INFO
ls -l components/viewer/build
