"""Reports of a campaign: Jinja templates rendered to issue bodies, comments, a Markdown summary
and an HTML report (:mod:`xamt.report.render`), and a deduplicating GitHub filer
(:mod:`xamt.report.github`), tested against a local fake of the GitHub REST endpoints it uses
(``tests/fakegithub.py``, test support that is not shipped). :mod:`xamt.report.commands`
holds the CLI's command functions.

Importing this package imports neither jinja2 nor PyGithub; its modules do.
"""
