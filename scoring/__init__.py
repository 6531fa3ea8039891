"""Pure-Python recommendation logic: decision rules, ranking, the fit calculator and break-even maths.

Nothing here imports Django. Selectors in `recommend/` turn catalog and probe rows into the plain
values these functions take, which keeps every rule testable without a database.
"""
