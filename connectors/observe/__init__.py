"""What a daemon shows: metrics and health endpoints, the watchdog, and the reports."""
