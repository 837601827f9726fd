package main

// The image is built on an empty base (make image: scratch, no /etc/ssl, no /usr/share/zoneinfo),
// so the binary carries what it would otherwise read from the base's files: Mozilla's root
// certificates, used only when the system has none (an S3 endpoint with a public certificate
// is verified without a CA bundle mounted), and the time zone database (a backup schedule that
// names its zone, robfig/cron's CRON_TZ= prefix, would otherwise fail to load it).
import (
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)
