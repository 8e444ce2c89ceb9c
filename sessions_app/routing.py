from django.urls import path

from sessions_app.consumers import BrainConsumer

websocket_urlpatterns = [path("ws/brain/", BrainConsumer.as_asgi())]
