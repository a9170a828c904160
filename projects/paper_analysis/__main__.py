"""``python -m projects.paper_analysis``: the study of analysis.py."""

from projects.paper_analysis.analysis import main

main()
