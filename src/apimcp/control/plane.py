"""The control plane's parts wired together: the store, the secret keys, the change signal, the limits,
and how imports fetch and run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.changes import ChangeSignal
from apimcp.control.crypto import KeySet
from apimcp.control.domain import history
from apimcp.control.import_pool import ImportPool
from apimcp.control.limits import ApiLimits
from apimcp.control.reports import Reports
from apimcp.control.rereads import Rereads
from apimcp.control.store import Store
from apimcp.importers.openapi import SchemaLimits
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import Fetcher, FetchLimits
from apimcp.safety.yaml_loading import YamlLimits
from apimcp.sso.provider import Provider
from apimcp.sso.settings import SsoSettings


@dataclass
class ControlPlane:
    store: Store
    keys: KeySet
    signal: ChangeSignal = field(default_factory=ChangeSignal)
    limits: ApiLimits = field(default_factory=ApiLimits)
    fetch_policy: AddressPolicy = field(default_factory=AddressPolicy)
    """Which addresses imports and attachments by URL may reach: public ones, plus the allow-list's."""
    fetch_limits: FetchLimits = field(default_factory=FetchLimits)
    yaml_limits: YamlLimits = field(default_factory=YamlLimits)
    schema_limits: SchemaLimits = field(default_factory=SchemaLimits)
    imports: ImportPool = field(default_factory=ImportPool)
    """Imports run here, never in the thread pool the REST API's other routes share."""
    reports: Reports = field(default_factory=Reports)
    """Discovery reports, made one at a time on the import workers, and kept."""
    rereads: Rereads = field(default_factory=Rereads)
    """MCP servers gateways said changed, read again at most once a minute each (`upstream_refresh.reread_soon`)."""
    sso: SsoSettings | None = None
    """The OpenID provider people sign in with; None: people use tokens only."""
    _provider: Provider | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # Waiting gateways learn of a change as soon as the transaction that made it commits.
        self.store.on_commit(self._committed)
        history.install(self.store.listen)  # a version of each object each transaction changes

    def _committed(self, session: Session) -> None:
        if changes.recorded(session):  # reads and heartbeats commit too; they must not wake anyone
            self.signal.notify()

    @property
    def sign_in_provider(self) -> Provider | None:
        """The provider of `sso`, its metadata and keys kept between sign-ins."""
        if self.sso is None:
            return None
        if self._provider is None or self._provider.settings is not self.sso:
            self._provider = Provider(self.sso)
        return self._provider

    @property
    def fetcher(self) -> Fetcher:
        return Fetcher(self.fetch_policy, self.fetch_limits)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.store.session() as session:
            yield session
