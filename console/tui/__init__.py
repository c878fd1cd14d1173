"""The Textual console: the app and its stylesheet, screens, widgets, dialogs and the parse cache, with its two
doors, a terminal (launch.py) and a browser tab per connection (serve.py and its page). The only room that imports
textual."""
