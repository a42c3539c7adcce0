"""Traffic: what each gateway counts of its expositions' requests, minute by minute, and reports to its control
plane, which keeps, rolls up and serves it (`control.domain.traffic`)."""
