"""Corrections and preferences, application side: capture, analyze, route (issue 14)."""
