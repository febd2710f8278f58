#!/usr/bin/env bash
# A private Orthanc PACS with DICOMweb for Casebook's tests and development, idempotently.
#
#   scripts/orthanc_setup.sh        -> prints the DICOMweb URL, credentials included, on stdout
#   export CASEBOOK_TEST_ORTHANC_URL=$(scripts/orthanc_setup.sh)
#
# The URL looks like http://casebook:<password>@127.0.0.1:8642/dicom-web (the tests split it into
# pacs.url, pacs.username and pacs.password). Progress goes to stderr. Steps, each skipped when done:
#   1. Debian's orthanc (1.10) and orthanc-dicomweb (1.7) installed with apt;
#   2. a private folder $CASEBOOK_ORTHANC_ROOT (storage, index, configuration, log, a random
#      password in a 0600 file): nothing of the system's /etc/orthanc or /var/lib/orthanc is used;
#   3. Orthanc started on $CASEBOOK_ORTHANC_PORT with authentication on, remote access refused
#      (Orthanc 1.10 has no bind-address option: it accepts loopback clients only and answers 403
#      to any other), and only the DICOMweb plug-in loaded; its DIMSE listener (AE title
#      CASEBOOKPACS, port $CASEBOOK_ORTHANC_DICOM_PORT) answers only the calling AE title CASEBOOK
#      from 127.0.0.1 (DicomCheckModalityHost), never an unknown AE.
# A running Orthanc whose configuration differs from the one written here is restarted.
# Not root: prints the URL only if such a server is already running, else a message and exit 0.
set -euo pipefail

PORT="${CASEBOOK_ORTHANC_PORT:-8642}"
DICOM_PORT="${CASEBOOK_ORTHANC_DICOM_PORT:-4342}"
ROOT="${CASEBOOK_ORTHANC_ROOT:-/tmp/casebook-orthanc}"
USER_NAME=casebook
PLUGIN=/usr/share/orthanc/plugins/libOrthancDicomWeb.so

say() { echo "orthanc_setup: $*" >&2; }
url() { echo "http://${USER_NAME}:$(cat "$ROOT/password")@127.0.0.1:${PORT}/dicom-web"; }
ready() {
  [ -r "$ROOT/password" ] &&
    curl -fsS -m 3 -u "${USER_NAME}:$(cat "$ROOT/password")" "http://127.0.0.1:${PORT}/dicom-web/studies?limit=1" \
      >/dev/null 2>&1
}

if [ "$(id -u)" != 0 ]; then
  if ready; then
    url
    exit 0
  fi
  say "not root: cannot install or start a private Orthanc; PACS tests will be skipped."
  exit 0
fi

if [ ! -x /usr/sbin/Orthanc ] || [ ! -f "$PLUGIN" ] || ! command -v curl >/dev/null; then
  say "installing orthanc and orthanc-dicomweb with apt (about 30 s)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq orthanc orthanc-dicomweb curl >&2
fi

mkdir -p "$ROOT/db"
OLD_CONFIG=$(cat "$ROOT/orthanc.json" 2>/dev/null || true)
chmod 700 "$ROOT"
if [ ! -s "$ROOT/password" ]; then
  (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$ROOT/password")
fi
PASSWORD=$(cat "$ROOT/password")
(umask 077 && cat >"$ROOT/orthanc.json" <<EOF
{
  "Name": "casebook-test-pacs",
  "StorageDirectory": "$ROOT/db",
  "IndexDirectory": "$ROOT/db",
  "Plugins": ["$PLUGIN"],
  "HttpServerEnabled": true,
  "HttpPort": $PORT,
  "RemoteAccessAllowed": false,
  "AuthenticationEnabled": true,
  "RegisteredUsers": {"$USER_NAME": "$PASSWORD"},
  "DicomServerEnabled": true,
  "DicomAet": "CASEBOOKPACS",
  "DicomPort": $DICOM_PORT,
  "DicomCheckCalledAet": true,
  "DicomCheckModalityHost": true,
  "DicomAlwaysAllowEcho": false,
  "DicomAlwaysAllowFind": false,
  "DicomAlwaysAllowGet": false,
  "DicomAlwaysAllowMove": false,
  "DicomAlwaysAllowStore": false,
  "DicomModalities": {
    "casebook": {"AET": "CASEBOOK", "Host": "127.0.0.1", "Port": 104, "AllowEcho": true, "AllowFind": true,
                 "AllowGet": true, "AllowMove": false, "AllowStore": true}
  },
  "HttpDescribeErrors": false,
  "StableAge": 2,
  "DicomWeb": {"Enable": true, "Root": "/dicom-web/", "EnableWado": false, "Host": "127.0.0.1:$PORT", "Ssl": false}
}
EOF
)

if ready && [ "$OLD_CONFIG" = "$(cat "$ROOT/orthanc.json")" ]; then
  url
  exit 0
fi
if [ -f "$ROOT/orthanc.pid" ] && kill -0 "$(cat "$ROOT/orthanc.pid")" 2>/dev/null; then
  say "restarting the Orthanc from $ROOT (its configuration changed, or it does not answer)"
  OLD_PID=$(cat "$ROOT/orthanc.pid")
  kill "$OLD_PID" || true
  for _ in $(seq 1 60); do  # it must let go of its index and ports first (a few seconds)
    kill -0 "$OLD_PID" 2>/dev/null || break
    sleep 0.5
  done
fi
if curl -s -m 2 -o /dev/null "http://127.0.0.1:${PORT}/" 2>/dev/null; then
  say "port $PORT is taken by another server; set CASEBOOK_ORTHANC_PORT to a free port. PACS tests will be skipped."
  exit 0
fi

say "starting Orthanc on 127.0.0.1:$PORT (storage in $ROOT/db)"
setsid nohup /usr/sbin/Orthanc "$ROOT/orthanc.json" >"$ROOT/orthanc.log" 2>&1 </dev/null &
echo $! >"$ROOT/orthanc.pid"
for _ in $(seq 1 60); do
  if ready; then
    say "ready: Orthanc $(/usr/sbin/Orthanc --version | head -n1 | awk '{print $2}') with DICOMweb"
    url
    exit 0
  fi
  sleep 0.5
done
say "Orthanc did not answer within 30 s; see $ROOT/orthanc.log. PACS tests will be skipped."
exit 0
