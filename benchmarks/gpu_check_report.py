"""A pytest plugin for the GPU check's tests step (``-p gpu_check_report``
with benchmarks/ on PYTHONPATH): each failure's test and message printed
as the test ends, not only in pytest's report at the end, so that a run cut
by its time limit still says why a test failed."""

_config = None


def pytest_configure(config):
    global _config
    _config = config


def pytest_runtest_logreport(report):
    reporter = _config and _config.pluginmanager.get_plugin("terminalreporter")
    if not report.failed or not reporter:
        return
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
    lines = (crash or report.longreprtext).strip().splitlines() or [""]
    message = lines[0] if crash else lines[-1]
    reporter.ensure_newline()
    reporter.write_line(f"GPU-CHECK FAILED {report.nodeid} ({report.when}): {message}")
    reporter.write_line(report.longreprtext)
